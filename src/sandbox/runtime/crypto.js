// crypto (a Crypto) and crypto.subtle (a SubtleCrypto): getRandomValues and randomUUID from the
// random stream of crypto-random.js; digest and HMAC computed by the host (node:crypto), with
// arguments read as the standard reads them (crypto-algorithms.js). Every other operation
// rejects with NotSupportedError. Errors of a promise-returning method always reject, never throw.

function cryptoCall(body) {
  return hostCall('crypto', jsonStringify(body), (e) => new DOMException(typeof e.message === 'string' ? e.message : 'The operation failed.', 'OperationError'));
}

function toArrayBuffer(b64) {
  const bytes = base64ToBytes(b64);
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
}

let mintingCrypto = false;
let subtle;

function checkSubtle(self) {
  if (self !== subtle) throw new $TypeError('Illegal invocation: not the SubtleCrypto.');
}

/** The HMAC key of a sign or verify call, checked as the standard checks it. */
function signingKey(normalized, key, usage) {
  const rec = keyRecord(key);
  if (normalized.name !== 'HMAC') throw new DOMException(`The key is an HMAC key, not a ${normalized.name} key.`, 'InvalidAccessError');
  if (!keyAllows(rec, usage)) throw new DOMException(`The key does not allow "${usage}".`, 'InvalidAccessError');
  return rec;
}

/** The bytes of an HMAC key from a JWK, with every check the standard makes of one. */
function hmacKeyFromJwk(jwk, hash, extractable, usages) {
  if (jwk.kty !== 'oct') throw new DOMException('The JWK must have kty "oct".', 'DataError');
  if (jwk.k === undefined) throw new DOMException('The JWK has no "k".', 'DataError');
  // Read as leniently as Node does: padding and the standard alphabet's + and / are accepted too.
  const bytes = base64ToBytes(jwk.k.replace(/-/g, '+').replace(/_/g, '/'));
  if (!bytes) throw new DOMException('The JWK "k" is not base64url.', 'DataError');
  if (jwk.alg !== undefined && jwk.alg !== HASH_JWK_ALG[hash]) throw new DOMException(`The JWK "alg" is not ${HASH_JWK_ALG[hash]}.`, 'DataError');
  if (usages.length && jwk.use !== undefined && jwk.use !== 'sig') throw new DOMException('The JWK "use" is not "sig".', 'DataError');
  if (jwk.key_ops !== undefined) {
    const ops = jwk.key_ops;
    for (let i = 0; i < ops.length; i++) {
      if (!KEY_USAGES.includes(ops[i]) || ops.indexOf(ops[i]) !== i) throw new DOMException('The JWK "key_ops" is not valid.', 'DataError');
    }
    if (!usages.every((u) => ops.includes(u))) throw new DOMException('The JWK "key_ops" does not allow every usage asked for.', 'DataError');
  }
  if (jwk.ext === false && extractable) throw new DOMException('The JWK is not extractable.', 'DataError');
  return bytes;
}

/** The key's length in bits: the data's, or the one asked for when it fits in the data's last byte. */
function hmacKeyLength(bytes, asked) {
  const bits = bytes.length * 8;
  if (bits === 0) throw new DOMException('An HMAC key must not be empty.', 'DataError');
  if (asked === undefined) return bits;
  if (asked > bits || asked <= bits - 8) throw new DOMException(`The length ${asked} does not match the key's ${bits} bits.`, 'DataError');
  return asked;
}

function checkHmacUsages(usages) {
  for (let i = 0; i < usages.length; i++) {
    if (usages[i] !== 'sign' && usages[i] !== 'verify') throw new DOMException(`Unsupported key usage for an HMAC key: ${usages[i]}`, 'SyntaxError');
  }
}

function notSupported(what) {
  return new DOMException(`${what} is not supported here: crypto.subtle offers digest and HMAC only.`, 'NotSupportedError');
}

class SubtleCrypto {
  constructor() {
    if (!mintingCrypto) throw new $TypeError('Illegal constructor');
  }
  async digest(algorithm, data) {
    checkSubtle(this);
    requireArguments(arguments.length, 2, 'SubtleCrypto.digest');
    const bytes = bufferSourceCopy(data, 'The data');
    const alg = normalizeAlgorithm('digest', algorithm);
    return toArrayBuffer(await cryptoCall({ __proto__: null, op: 'digest', alg: alg.name, data: bytesToBase64(bytes) }));
  }
  async importKey(format, keyData, algorithm, extractable, keyUsages) {
    checkSubtle(this);
    requireArguments(arguments.length, 5, 'SubtleCrypto.importKey');
    format = toKeyFormat(format);
    const isBuffer = keyData instanceof $ArrayBuffer || isView(keyData);
    const jwk = isBuffer ? undefined : toJsonWebKey(keyData);
    const raw = isBuffer ? bufferSourceCopy(keyData, 'The key data') : undefined;
    extractable = Boolean(extractable);
    const usages = toKeyUsages(keyUsages);
    const alg = normalizeAlgorithm('importKey', algorithm);
    if (format === 'jwk' ? isBuffer : !isBuffer) throw new $TypeError(format === 'jwk' ? 'The key data must be a JsonWebKey.' : 'The key data must be an ArrayBuffer, a TypedArray or a DataView.');
    checkHmacUsages(usages);
    let bytes;
    if (format === 'raw') bytes = raw;
    else if (format === 'jwk') bytes = hmacKeyFromJwk(jwk, alg.hash, extractable, usages);
    else throw notSupported(`The "${format}" key format for HMAC`);
    const length = hmacKeyLength(bytes, alg.length);
    if (usages.length === 0) throw new DOMException('A secret key must have at least one usage.', 'SyntaxError');
    return mintHmacKey(bytes, alg.hash, length, extractable, normalizeUsages(usages));
  }
  async generateKey(algorithm, extractable, keyUsages) {
    checkSubtle(this);
    requireArguments(arguments.length, 3, 'SubtleCrypto.generateKey');
    extractable = Boolean(extractable);
    const usages = toKeyUsages(keyUsages);
    const alg = normalizeAlgorithm('generateKey', algorithm);
    checkHmacUsages(usages);
    const length = alg.length === undefined ? HASH_BLOCK_BITS[alg.hash] : alg.length;
    if (length === 0) throw new DOMException('The key length must not be 0.', 'OperationError');
    if (usages.length === 0) throw new DOMException('A secret key must have at least one usage.', 'SyntaxError');
    return mintHmacKey(randomBytes((length + 7) >> 3), alg.hash, length, extractable, normalizeUsages(usages));
  }
  async exportKey(format, key) {
    checkSubtle(this);
    requireArguments(arguments.length, 2, 'SubtleCrypto.exportKey');
    format = toKeyFormat(format);
    const rec = keyRecord(key);
    if (!rec.extractable) throw new DOMException('The key is not extractable.', 'InvalidAccessError');
    if (format === 'raw') return copyKeyBytes(rec.bytes).buffer;
    if (format === 'jwk') return { kty: 'oct', k: keyToBase64(rec.bytes).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, ''), alg: HASH_JWK_ALG[rec.hash], key_ops: copyUsages(rec.usages), ext: rec.extractable };
    throw notSupported(`The "${format}" key format for HMAC`);
  }
  async sign(algorithm, key, data) {
    checkSubtle(this);
    requireArguments(arguments.length, 3, 'SubtleCrypto.sign');
    keyRecord(key);
    const bytes = bufferSourceCopy(data, 'The data');
    const rec = signingKey(normalizeAlgorithm('sign', algorithm), key, 'sign');
    return toArrayBuffer(await cryptoCall({ __proto__: null, op: 'hmac', alg: rec.hash, key: keyToBase64(rec.bytes), data: bytesToBase64(bytes) }));
  }
  async verify(algorithm, key, signature, data) {
    checkSubtle(this);
    requireArguments(arguments.length, 4, 'SubtleCrypto.verify');
    keyRecord(key);
    const sig = bufferSourceCopy(signature, 'The signature');
    const bytes = bufferSourceCopy(data, 'The data');
    const rec = signingKey(normalizeAlgorithm('verify', algorithm), key, 'verify');
    const body = { __proto__: null, op: 'verify', alg: rec.hash, key: keyToBase64(rec.bytes), data: bytesToBase64(bytes), signature: bytesToBase64(sig) };
    return (await cryptoCall(body)) === true;
  }
  async encrypt() {
    checkSubtle(this);
    throw notSupported('encrypt');
  }
  async decrypt() {
    checkSubtle(this);
    throw notSupported('decrypt');
  }
  async deriveBits() {
    checkSubtle(this);
    throw notSupported('deriveBits');
  }
  async deriveKey() {
    checkSubtle(this);
    throw notSupported('deriveKey');
  }
  async wrapKey() {
    checkSubtle(this);
    throw notSupported('wrapKey');
  }
  async unwrapKey() {
    checkSubtle(this);
    throw notSupported('unwrapKey');
  }
  get [Symbol.toStringTag]() {
    return 'SubtleCrypto';
  }
}

let cryptoObject;

function checkCrypto(self) {
  if (self !== cryptoObject) throw new $TypeError('Illegal invocation: not the Crypto.');
}

class Crypto {
  constructor() {
    if (!mintingCrypto) throw new $TypeError('Illegal constructor');
  }
  get subtle() {
    checkCrypto(this);
    return subtle;
  }
  getRandomValues(array) {
    checkCrypto(this);
    if (arguments.length === 0) throw new $TypeError('getRandomValues requires 1 argument.');
    if (!isView(array)) throw new $TypeError('The data must be an integer TypedArray.');
    const name = apply(brand.typedArrayName, array, []);
    if (name === undefined || name === 'Float16Array' || name === 'Float32Array' || name === 'Float64Array') {
      throw new DOMException('The data must be an integer TypedArray.', 'TypeMismatchError');
    }
    if (array.byteLength > 65536) {
      throw new DOMException(`The ArrayBufferView's byte length (${array.byteLength}) exceeds 65536.`, 'QuotaExceededError');
    }
    rng(new $Uint8Array(array.buffer, array.byteOffset, array.byteLength));
    return array;
  }
  randomUUID() {
    checkCrypto(this);
    const b = randomBytes(16);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex = '';
    for (let i = 0; i < 16; i++) hex += (b[i] < 16 ? '0' : '') + b[i].toString(16);
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  }
  get [Symbol.toStringTag]() {
    return 'Crypto';
  }
}

mintingCrypto = true;
subtle = new SubtleCrypto();
cryptoObject = new Crypto();
mintingCrypto = false;
for (const o of [SubtleCrypto.prototype, SubtleCrypto, Crypto.prototype, Crypto, subtle, cryptoObject]) freeze(o);
markPlatformObject(subtle);
markPlatformObject(cryptoObject);
defineGlobal('SubtleCrypto', SubtleCrypto);
defineGlobal('Crypto', Crypto);
defineGlobal('crypto', cryptoObject);
