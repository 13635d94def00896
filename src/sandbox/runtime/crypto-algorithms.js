// How WebCrypto reads its arguments: the WebIDL conversions (a wrong type, a missing argument or
// member, or a value outside an enum is a TypeError) and algorithm normalization (a name matched
// without regard to case, an unknown one a NotSupportedError). Every name the standard
// registers for an operation is recognised, so that, as in browsers, a known algorithm used with
// an HMAC key is an InvalidAccessError; only digest and HMAC are computed here.

const KEY_USAGES = ['encrypt', 'decrypt', 'sign', 'verify', 'deriveKey', 'deriveBits', 'wrapKey', 'unwrapKey'];
const KEY_FORMATS = ['raw', 'spki', 'pkcs8', 'jwk'];
const HASH_BLOCK_BITS = { __proto__: null, 'SHA-1': 512, 'SHA-256': 512, 'SHA-384': 1024, 'SHA-512': 1024 };
const HASH_JWK_ALG = { __proto__: null, 'SHA-1': 'HS1', 'SHA-256': 'HS256', 'SHA-384': 'HS384', 'SHA-512': 'HS512' };


/** [EnforceRange] unsigned long. */
function toUnsignedLong(v, what) {
  const n = $Number(v);
  if (n !== n || n === Infinity || n === -Infinity) throw new $TypeError(`${what} must be a finite number.`);
  const t = n < 0 ? -Math.floor(-n) : Math.floor(n);
  if (t < 0 || t > 4294967295) throw new $TypeError(`${what} is outside the range 0 to 4294967295.`);
  return t;
}

/** sequence<KeyUsage> */
function toKeyUsages(v) {
  if (!isObjectLike(v) || typeof v[Symbol.iterator] !== 'function') throw new $TypeError('The key usages must be a sequence.');
  const out = [];
  for (const item of v) {
    const usage = toDOMString(item);
    if (!KEY_USAGES.includes(usage)) throw new $TypeError(`'${usage}' is not a valid KeyUsage.`);
    out[out.length] = usage;
  }
  return out;
}

function toKeyFormat(v) {
  const format = toDOMString(v);
  if (!KEY_FORMATS.includes(format)) throw new $TypeError(`'${format}' is not a valid KeyFormat.`);
  return format;
}

/** A copy of any BufferSource's bytes, taken when the method is called, as the standard asks. */
function bufferSourceCopy(v, what) {
  return toBytes(v, what).slice();
}

/** The JsonWebKey dictionary members HMAC reads. */
function toJsonWebKey(v) {
  if (v === undefined || v === null) return { __proto__: null };
  if (!isObjectLike(v)) throw new $TypeError('The key data must be a JsonWebKey.');
  const jwk = { __proto__: null };
  for (const name of ['alg', 'k', 'kty', 'use']) if (v[name] !== undefined) jwk[name] = toDOMString(v[name]);
  if (v.ext !== undefined) jwk.ext = Boolean(v.ext);
  if (v.key_ops !== undefined) {
    const ops = v.key_ops;
    if (!isObjectLike(ops) || typeof ops[Symbol.iterator] !== 'function') throw new $TypeError('key_ops must be a sequence.');
    jwk.key_ops = [];
    for (const op of ops) jwk.key_ops[jwk.key_ops.length] = toDOMString(op);
  }
  return jwk;
}

// The parameters each registered algorithm takes, per operation: a member marked required is a
// TypeError when missing.
const requiredMember = (alg, member) => {
  if (alg[member] === undefined) throw new $TypeError(`The algorithm is missing its required "${member}" member.`);
  return alg[member];
};
const noParams = () => ({ __proto__: null });
const hashParam = (alg) => ({ __proto__: null, hash: normalizeAlgorithm('digest', requiredMember(alg, 'hash')).name });
const hmacParams = (alg) => {
  const out = hashParam(alg);
  if (alg.length !== undefined) out.length = toUnsignedLong(alg.length, 'The length');
  return out;
};
const SIGNING = {
  __proto__: null,
  'RSASSA-PKCS1-v1_5': noParams,
  'RSA-PSS': (alg) => ({ __proto__: null, saltLength: toUnsignedLong(requiredMember(alg, 'saltLength'), 'saltLength') }),
  ECDSA: hashParam,
  Ed25519: noParams,
  HMAC: noParams,
};
const REGISTERED = {
  __proto__: null,
  digest: { __proto__: null, 'SHA-1': noParams, 'SHA-256': noParams, 'SHA-384': noParams, 'SHA-512': noParams },
  importKey: { __proto__: null, HMAC: hmacParams },
  generateKey: { __proto__: null, HMAC: hmacParams },
  sign: SIGNING,
  verify: SIGNING,
};

/** The standard's "normalize an algorithm": { name (as registered), ...its parameters }. */
function normalizeAlgorithm(op, algorithm) {
  const alg = isObjectLike(algorithm) ? algorithm : { name: toDOMString(algorithm) };
  const name = toDOMString(requiredMember(alg, 'name'));
  const registered = REGISTERED[op];
  const upper = name.toUpperCase();
  const names = keys(registered);
  for (let i = 0; i < names.length; i++) {
    if (names[i].toUpperCase() === upper) {
      const out = registered[names[i]](alg);
      out.name = names[i];
      return out;
    }
  }
  throw new DOMException(`Unrecognized algorithm name: ${name} (crypto.subtle offers digest and HMAC only).`, 'NotSupportedError');
}

/** Usages as a key holds them: each once, in the order the standard lists them. */
function normalizeUsages(usages) {
  return KEY_USAGES.filter((u) => usages.includes(u));
}
