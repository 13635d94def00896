import { createPublicKey, type KeyObject, verify } from 'node:crypto';
import { childPath } from '../http/field-path.ts';
import { GooglePayError } from './errors.ts';

/**
 * The small pieces ECv2 is built from: strict base64, Google's length-value encoding, P-256
 * public keys in the two forms tokens carry them, and millisecond timestamps. Every failure is
 * a GooglePayError naming the field.
 */


/** Standard base64 (padding optional); Node's own decoder skips characters it does not know, which would accept garbage. */
export function strictBase64(value: string): Buffer | undefined {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(value)) return undefined;
  const bytes = Buffer.from(value, 'base64');
  return bytes.toString('base64').replace(/=+$/, '') === value.replace(/=+$/, '') ? bytes : undefined;
}

/**
 * `value` as bytes, or a malformed_token error at `field` when it is not a base64 string.
 * `name` is how the message calls it, when not the field itself (a key inside a JSON string).
 */
export function base64Field(value: unknown, field: string, name = leaf(field)): Buffer {
  if (typeof value !== 'string') throw new GooglePayError('malformed_token', `${name} must be a base64 string`, field);
  const bytes = strictBase64(value);
  if (bytes === undefined) throw new GooglePayError('malformed_token', `${name} is not valid base64`, field);
  return bytes;
}

/** LV(a) ‖ LV(b) ‖ …: each part as a 4-byte little-endian length of its UTF-8 bytes, then the bytes. */
export function lengthValue(...parts: string[]): Buffer {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const bytes = Buffer.from(part, 'utf8');
    const length = Buffer.alloc(4);
    length.writeUInt32LE(bytes.length);
    chunks.push(length, bytes);
  }
  return Buffer.concat(chunks);
}

/** ECDSA-P256-SHA256 over `data` with a DER signature; anything unreadable is simply not a valid signature. */
export function verifiesUnder(key: KeyObject, data: Buffer, signature: Buffer): boolean {
  try {
    return verify('sha256', data, { key, dsaEncoding: 'der' }, signature);
  } catch {
    return false;
  }
}

/**
 * The same check in libuv's thread pool: the event loop only hands it over, so a token's
 * verification does not hold up other requests (and uses the other core).
 */
export function verifiesUnderInPool(key: KeyObject, data: Buffer, signature: Buffer): Promise<boolean> {
  return new Promise((resolve) => {
    try {
      // The key object itself, not { key, dsaEncoding: 'der' } (DER is the default): the options
      // form has Node inspect the key again on this thread, four times the cost of the hand-over.
      verify('sha256', data, key, signature, (err, ok) => resolve(!err && ok));
    } catch {
      resolve(false);
    }
  });
}

/** A P-256 public key from X.509 SubjectPublicKeyInfo bytes; undefined if they are not one. */
export function p256FromSpki(der: Buffer): KeyObject | undefined {
  try {
    const key = createPublicKey({ key: der, format: 'der', type: 'spki' });
    return isP256(key) ? key : undefined;
  } catch {
    return undefined;
  }
}

/** The 65-byte uncompressed point of a P-256 public (or private) key: the form Google's console and `publicKey` parameter take. */
export function p256Point(key: KeyObject): Buffer {
  const jwk = key.export({ format: 'jwk' });
  return Buffer.concat([Buffer.from([0x04]), Buffer.from(jwk.x!, 'base64url'), Buffer.from(jwk.y!, 'base64url')]);
}

export function isP256(key: KeyObject): boolean {
  return key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1';
}

/** Google writes times as strings of milliseconds since the epoch; a plain integer is taken too. Undefined if neither. */
export function millis(value: unknown): number | undefined {
  if (typeof value === 'string' && /^\d{1,16}$/.test(value)) return Number(value);
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
  return undefined;
}

/** A time for a message: ISO 8601 when representable. */
export function isoTime(ms: number): string {
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? `${ms} ms` : date.toISOString();
}

/** JSON text parsed, or a malformed_token error naming `field`. */
export function parseJsonField(text: string, field: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new GooglePayError('malformed_token', `${leaf(field)} is not JSON`, field);
  }
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Checks `value` is an object with exactly the keys `required`, naming the first key missing,
 * else the first one too many. `inside` says the object was read from a JSON string at `field`,
 * so the error stays on that field and the message names the keys within it.
 */
export function exactKeys(value: unknown, field: string, required: readonly string[], inside?: string): Record<string, unknown> {
  const name = inside ?? leaf(field);
  const what = `${name} must be ${inside ? 'JSON of an object' : 'an object'} with exactly ${listed(required)}`;
  if (!isPlainObject(value)) throw new GooglePayError('malformed_token', what, field);
  for (const key of required) {
    if (!Object.hasOwn(value, key)) throw new GooglePayError('malformed_token', `${what}; ${key} is missing`, inside ? field : childPath(field, key));
  }
  for (const key of Object.keys(value)) {
    if (!required.includes(key)) {
      throw new GooglePayError('malformed_token', `${what}; ${JSON.stringify(key.slice(0, 40))} is not one of them`, inside ? field : childPath(field, key));
    }
  }
  return value;
}

/** `value` if a string, else a malformed_token error at `field`. */
export function stringField(value: unknown, field: string): string {
  if (typeof value !== 'string') throw new GooglePayError('malformed_token', `${leaf(field)} must be a string`, field);
  return value;
}

/**
 * A field as a message names it, from the token down: `intermediateSigningKey.signedKey` for
 * `google_payment_method_token.intermediateSigningKey.signedKey`, "the token" for the token itself.
 */
export function leaf(field: string): string {
  const at = field.search(/[.[]/);
  if (at < 0) return 'the token';
  return field[at] === '.' ? field.slice(at + 1) : field.slice(at);
}

function listed(keys: readonly string[]): string {
  return keys.length === 1 ? keys[0] : `${keys.slice(0, -1).join(', ')} and ${keys[keys.length - 1]}`;
}
