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

/** An HMAC key of `length` bits: the bits past it in the last byte are zero, as the key is "the first length bits". */
function mintHmacKey(data, hash, length, extractable, usages) {
  const bytes = data.slice(0, (length + 7) >> 3);
  if (length % 8) bytes[bytes.length - 1] &= 0xff << (8 - (length % 8));
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
    usages,
    algorithm: { name: 'HMAC', length, hash: { name: hash } },
    usagesList: Array.from(usages),
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
