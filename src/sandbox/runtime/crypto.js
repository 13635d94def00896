// crypto.getRandomValues / randomUUID from a ChaCha20 stream keyed with 32 random bytes the
// host sends for each call, and a crypto.subtle with digest and HMAC computed by the host
// (node:crypto). Anything else in crypto.subtle rejects with NotSupportedError.

// The stream is keyed again for every call (resetRandom, from arm): the host sends 8 fresh random
// 32-bit words with each call, so no call's values follow from another's.
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
      for (let i = 0; i < out.length; i++) {
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

function getRandomValues(array) {
  if (!isView(array) || array instanceof DataView || array instanceof Float32Array || array instanceof Float64Array || (typeof Float16Array === 'function' && array instanceof Float16Array)) {
    throw new DOMException('The data must be an integer TypedArray.', 'TypeMismatchError');
  }
  if (array.byteLength > 65536) {
    throw new DOMException(`The ArrayBufferView's byte length (${array.byteLength}) exceeds 65536.`, 'QuotaExceededError');
  }
  rng(new $Uint8Array(array.buffer, array.byteOffset, array.byteLength));
  return array;
}

function randomUUID() {
  const b = randomBytes(16);
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  let hex = '';
  for (let i = 0; i < 16; i++) hex += (b[i] < 16 ? '0' : '') + b[i].toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const HASHES = create(null);
HASHES['SHA-1'] = 512;
HASHES['SHA-256'] = 512;
HASHES['SHA-384'] = 1024;
HASHES['SHA-512'] = 1024;

function hashName(alg) {
  const name = $String(alg !== null && typeof alg === 'object' ? alg.name : alg).toUpperCase();
  if (HASHES[name] === undefined) throw new DOMException(`Unrecognized hash algorithm: ${name}`, 'NotSupportedError');
  return name;
}

function algorithmName(alg) {
  return $String(alg !== null && typeof alg === 'object' ? alg.name : alg).toUpperCase();
}

function notSupported(what) {
  return new DOMException(`${what} is not supported here: crypto.subtle offers digest and HMAC only.`, 'NotSupportedError');
}

function cryptoCall(body) {
  return hostCall('crypto', jsonStringify(body), (e) => new DOMException(typeof e.message === 'string' ? e.message : 'The operation failed.', 'OperationError'));
}

function toArrayBuffer(b64) {
  const bytes = base64ToBytes(b64);
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
}

const keyBytes = privateMap(); // CryptoKey → its raw bytes
let mintingKey = false;

class CryptoKey {
  constructor() {
    if (!mintingKey) throw new $TypeError('Illegal constructor');
  }
  get [Symbol.toStringTag]() {
    return 'CryptoKey';
  }
}

function mintHmacKey(bytes, hash, extractable, usages) {
  mintingKey = true;
  const key = new CryptoKey();
  mintingKey = false;
  for (const u of usages) {
    if (u !== 'sign' && u !== 'verify') throw new DOMException(`Unsupported key usage for an HMAC key: ${u}`, 'SyntaxError');
  }
  defineProperty(key, 'type', { __proto__: null, value: 'secret', enumerable: true });
  defineProperty(key, 'extractable', { __proto__: null, value: Boolean(extractable), enumerable: true });
  defineProperty(key, 'algorithm', { __proto__: null, value: freeze({ name: 'HMAC', hash: freeze({ name: hash }), length: bytes.length * 8 }), enumerable: true });
  defineProperty(key, 'usages', { __proto__: null, value: freeze(Array.from(usages)), enumerable: true });
  keyBytes.set(key, bytes.slice());
  return key;
}

function isCryptoKey(value) {
  return keyBytes.has(value);
}

/** structuredClone of a key: a new CryptoKey with the same bytes, algorithm, extractability and usages. */
function copyCryptoKey(key) {
  return mintHmacKey(keyBytes.get(key), key.algorithm.hash.name, key.extractable, key.usages);
}

function hmacKey(key, usage) {
  const bytes = keyBytes.get(key);
  if (!bytes) throw new $TypeError('The key is not a CryptoKey.');
  if (!key.usages.includes(usage)) throw new DOMException(`The key does not allow "${usage}".`, 'InvalidAccessError');
  return bytes;
}

const base64url = (bytes) => bytesToBase64(bytes).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

const subtle = freeze({
  async digest(algorithm, data) {
    const alg = hashName(algorithm);
    return toArrayBuffer(await cryptoCall({ __proto__: null, op: 'digest', alg, data: bytesToBase64(toBytes(data, 'The data')) }));
  },
  async importKey(format, keyData, algorithm, extractable, usages) {
    if (algorithmName(algorithm) !== 'HMAC') throw notSupported(`The ${algorithmName(algorithm)} algorithm`);
    const hash = hashName(algorithm.hash);
    let bytes;
    if (format === 'raw') {
      bytes = toBytes(keyData, 'The key data');
    } else if (format === 'jwk') {
      if (!keyData || keyData.kty !== 'oct' || typeof keyData.k !== 'string') throw new DOMException('The JWK must be an "oct" key with "k".', 'DataError');
      bytes = base64ToBytes(keyData.k.replace(/-/g, '+').replace(/_/g, '/'));
      if (!bytes) throw new DOMException('The JWK "k" is not base64url.', 'DataError');
    } else {
      throw notSupported(`The "${format}" key format`);
    }
    if (bytes.length === 0) throw new DOMException('An HMAC key must not be empty.', 'DataError');
    return mintHmacKey(bytes, hash, extractable, usages || []);
  },
  async generateKey(algorithm, extractable, usages) {
    if (algorithmName(algorithm) !== 'HMAC') throw notSupported(`The ${algorithmName(algorithm)} algorithm`);
    const hash = hashName(algorithm.hash);
    const bits = algorithm.length === undefined ? HASHES[hash] : Number(algorithm.length);
    if (!(bits > 0) || bits % 8 !== 0 || bits > 8192) throw new DOMException('The key length must be a positive multiple of 8.', 'OperationError');
    return mintHmacKey(randomBytes(bits / 8), hash, extractable, usages || []);
  },
  async exportKey(format, key) {
    const bytes = keyBytes.get(key);
    if (!bytes) throw new $TypeError('The key is not a CryptoKey.');
    if (!key.extractable) throw new DOMException('The key is not extractable.', 'InvalidAccessError');
    if (format === 'raw') return bytes.slice().buffer;
    if (format === 'jwk') {
      return { kty: 'oct', k: base64url(bytes), alg: 'HS' + key.algorithm.hash.name.slice(4), key_ops: Array.from(key.usages), ext: true };
    }
    throw notSupported(`The "${format}" key format`);
  },
  async sign(algorithm, key, data) {
    if (algorithmName(algorithm) !== 'HMAC') throw notSupported(`The ${algorithmName(algorithm)} algorithm`);
    const k = hmacKey(key, 'sign');
    const body = { __proto__: null, op: 'hmac', alg: key.algorithm.hash.name, key: bytesToBase64(k), data: bytesToBase64(toBytes(data, 'The data')) };
    return toArrayBuffer(await cryptoCall(body));
  },
  async verify(algorithm, key, signature, data) {
    if (algorithmName(algorithm) !== 'HMAC') throw notSupported(`The ${algorithmName(algorithm)} algorithm`);
    const k = hmacKey(key, 'verify');
    const body = {
      __proto__: null,
      op: 'verify',
      alg: key.algorithm.hash.name,
      key: bytesToBase64(k),
      data: bytesToBase64(toBytes(data, 'The data')),
      signature: bytesToBase64(toBytes(signature, 'The signature')),
    };
    return (await cryptoCall(body)) === true;
  },
  async encrypt() {
    throw notSupported('encrypt');
  },
  async decrypt() {
    throw notSupported('decrypt');
  },
  async deriveBits() {
    throw notSupported('deriveBits');
  },
  async deriveKey() {
    throw notSupported('deriveKey');
  },
  async wrapKey() {
    throw notSupported('wrapKey');
  },
  async unwrapKey() {
    throw notSupported('unwrapKey');
  },
});

defineGlobal('CryptoKey', CryptoKey);
const cryptoObject = freeze({ subtle, getRandomValues, randomUUID });
markPlatformObject(subtle);
markPlatformObject(cryptoObject);
defineGlobal('crypto', cryptoObject);
