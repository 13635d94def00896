// The random stream behind crypto.getRandomValues / randomUUID and generated keys: ChaCha20, keyed
// again for every call (resetRandom, from arm) with the 8 fresh random 32-bit words the host sends
// with each call, so no call's values follow from another's.
const rngState = (() => {
  const state = new Uint32Array(16);
  const x = new Uint32Array(16);
  const block = new $Uint8Array(64);
  const words = new Uint32Array(block.buffer);
  const SIGMA = [0x61707865, 0x3320646e, 0x79622d32, 0x6b206574];
  let used = 64;
  let keyed = false;
  const key = () => {
    const seed = randomSeed;
    if (!armed || !$isArray(seed) || seed.length !== 8) throw new $Error('No random seed yet.');
    for (let i = 0; i < 4; i++) state[i] = SIGMA[i];
    for (let i = 0; i < 8; i++) state[4 + i] = seed[i];
    for (let i = 12; i < 16; i++) state[i] = 0;
    keyed = true;
  };
  const rotl = (v, n) => (v << n) | (v >>> (32 - n));
  const quarter = (a, b, c, d) => {
    x[a] += x[b]; x[d] = rotl(x[d] ^ x[a], 16);
    x[c] += x[d]; x[b] = rotl(x[b] ^ x[c], 12);
    x[a] += x[b]; x[d] = rotl(x[d] ^ x[a], 8);
    x[c] += x[d]; x[b] = rotl(x[b] ^ x[c], 7);
  };
  const refill = () => {
    for (let i = 0; i < 16; i++) x[i] = state[i];
    for (let i = 0; i < 10; i++) {
      quarter(0, 4, 8, 12); quarter(1, 5, 9, 13); quarter(2, 6, 10, 14); quarter(3, 7, 11, 15);
      quarter(0, 5, 10, 15); quarter(1, 6, 11, 12); quarter(2, 7, 8, 13); quarter(3, 4, 9, 14);
    }
    for (let i = 0; i < 16; i++) words[i] = x[i] + state[i]; // little-endian, as V8 runs here
    if (++state[12] === 0) state[13]++;
    used = 0;
  };
  return {
    fill(out) {
      if (!keyed) key();
      // The engine's own length: a replaced getter would be handed the array a key is made in.
      const n = apply(brand.typedArrayLength, out, []);
      for (let i = 0; i < n; i++) {
        if (used === 64) refill();
        out[i] = block[used];
        block[used++] = 0;
      }
      return out;
    },
    reset() {
      keyed = false;
      for (let i = 0; i < 64; i++) block[i] = 0;
      used = 64;
    },
  };
})();
const rng = rngState.fill;

/** A new call: the next random byte comes from a stream keyed with this call's seed. */
function resetRandom() {
  rngState.reset();
}

function randomBytes(n) {
  return rng(new $Uint8Array(n));
}
