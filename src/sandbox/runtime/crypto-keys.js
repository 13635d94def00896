// CryptoKey: what a key is lives in a map user code cannot reach (its bytes, algorithm, usages);
// the object only has the standard's getters on its prototype, as in browsers and Node, so
// changing what `key.algorithm` returns never changes what the key signs with.

const keyRecords = privateMap(); // CryptoKey → { bytes, hash, length, extractable, usages, algorithm, usagesList }
let mintingKey = false;

function keyRecord(key) {
  const rec = keyRecords.get(key);
  if (!rec) throw new $TypeError('Illegal invocation: not a CryptoKey.');
  return rec;
}

class CryptoKey {
  constructor() {
    if (!mintingKey) throw new $TypeError('Illegal constructor');
  }
  get type() {
    keyRecord(this);
    return 'secret';
  }
  get extractable() {
    return keyRecord(this).extractable;
  }
  /** The same object on every read, as the standard caches it. */
  get algorithm() {
    return keyRecord(this).algorithm;
  }
  get usages() {
    return keyRecord(this).usagesList;
  }
  get [Symbol.toStringTag]() {
    return 'CryptoKey';
  }
}

/**
 * The first `n` bytes of a Uint8Array the runtime holds, as a new one. Key bytes only ever pass
 * through the engine's own length getter and element reads: a method or getter code replaced on
 * a prototype (slice, length, constructor, Symbol.species) never sees them, or the array.
 */
function copyKeyBytes(src, n = apply(brand.typedArrayLength, src, [])) {
  const out = new $Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = src[i];
  return out;
}

const B64_DIGITS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** Key bytes as base64, built without any method code can replace (see copyKeyBytes). */
function keyToBase64(bytes) {
  const n = apply(brand.typedArrayLength, bytes, []);
  let out = '';
  let i = 0;
  for (; i + 2 < n; i += 3) {
    const v = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
    out += B64_DIGITS[v >> 18] + B64_DIGITS[(v >> 12) & 63] + B64_DIGITS[(v >> 6) & 63] + B64_DIGITS[v & 63];
  }
  if (i < n) {
    const v = (bytes[i] << 16) | (i + 1 < n ? bytes[i + 1] << 8 : 0);
    out += B64_DIGITS[v >> 18] + B64_DIGITS[(v >> 12) & 63] + (i + 1 < n ? B64_DIGITS[(v >> 6) & 63] : '=') + '=';
  }
  return out;
}

/** Whether the key's own usages hold `usage`, without Array.prototype.includes. */
function keyAllows(rec, usage) {
  const usages = rec.usages;
  for (let i = 0; i < usages.length; i++) if (usages[i] === usage) return true;
  return false;
}

/** A new array of the list's strings, made with no method or setter code can replace. */
function copyUsages(list) {
  const out = [];
  for (let i = 0; i < list.length; i++) setOwn(out, i, $String(list[i]));
  return out;
}

/** An HMAC key of `length` bits: the bits past it in the last byte are zero, as the key is "the first length bits". */
function mintHmacKey(data, hash, length, extractable, usages) {
  const size = (length + 7) >> 3;
  const bytes = copyKeyBytes(data, size);
  if (length % 8) bytes[size - 1] &= 0xff << (8 - (length % 8));
  mintingKey = true;
  let key;
  try {
    key = new CryptoKey();
  } finally {
    mintingKey = false;
  }
  keyRecords.set(key, {
    __proto__: null,
    bytes,
    hash,
    length,
    extractable,
    usages: copyUsages(usages),
    algorithm: { name: 'HMAC', length, hash: { name: hash } },
    usagesList: copyUsages(usages),
  });
  return key;
}

function isCryptoKey(value) {
  return keyRecords.has(value);
}

/** structuredClone of a key: a new CryptoKey with the same bytes, algorithm, extractability and usages. */
function copyCryptoKey(key) {
  const rec = keyRecord(key);
  return mintHmacKey(rec.bytes, rec.hash, rec.length, rec.extractable, rec.usages);
}

freeze(CryptoKey.prototype);
freeze(CryptoKey);
defineGlobal('CryptoKey', CryptoKey);
