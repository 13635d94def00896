import type { KeyObject } from 'node:crypto';
import { childPath } from '../http/field-path.ts';
import { GooglePayError } from './errors.ts';
import {
  base64Field, exactKeys, isPlainObject, isoTime, millis, p256FromSpki, parseJsonField, strictBase64, stringField,
} from './primitives.ts';

/** The shape checks of an ECv2 token (steps 1, 4 and 6 of PAYMENTS-FACTS §2); the cryptography is in ecv2.ts. */

export const ECV2 = 'ECv2';

/** More signatures than Google ever sends (one) would only buy a caller verifications. */
export const MAX_SIGNATURES = 16;

export type Ecv2Parts = {
  /** The message signature, by the intermediate key. */
  signature: Buffer;
  /** Exactly as sent: it is what the root keys signed. */
  signedKey: string;
  /** The decodable entries of intermediateSigningKey.signatures; an entry that is not base64 just verifies nothing. */
  signatures: Buffer[];
  /** Exactly as sent: it is what the intermediate key signed. */
  signedMessage: string;
};

/**
 * The token as an object: the spec's body holds it as one, and Google's client hands it over
 * as a JSON string, which is taken too.
 */
export function tokenObject(token: unknown, field: string): Record<string, unknown> {
  const value = typeof token === 'string' ? parseJsonField(token, field) : token;
  if (!isPlainObject(value)) {
    throw new GooglePayError('malformed_token', 'the token must be an object with protocolVersion, signature, intermediateSigningKey and signedMessage', field);
  }
  return value;
}

/** Step 1: exactly the four keys, protocolVersion ECv2, intermediateSigningKey exactly signedKey and signatures. */
export function ecv2Parts(token: Record<string, unknown>, field: string): Ecv2Parts {
  const version = token.protocolVersion;
  if (typeof version !== 'string') throw new GooglePayError('malformed_token', 'protocolVersion must be a string', childPath(field, 'protocolVersion'));
  if (version !== ECV2) {
    throw new GooglePayError('unsupported_protocol', `protocolVersion must be ${ECV2} (got ${JSON.stringify(version.slice(0, 20))})`, childPath(field, 'protocolVersion'));
  }
  exactKeys(token, field, ['protocolVersion', 'signature', 'intermediateSigningKey', 'signedMessage']);
  const signature = base64Field(token.signature, childPath(field, 'signature'));
  const signedMessage = stringField(token.signedMessage, childPath(field, 'signedMessage'));
  const intermediateField = childPath(field, 'intermediateSigningKey');
  const intermediate = exactKeys(token.intermediateSigningKey, intermediateField, ['signedKey', 'signatures']);
  const signedKey = stringField(intermediate.signedKey, childPath(intermediateField, 'signedKey'));
  const signaturesField = childPath(intermediateField, 'signatures');
  const list = intermediate.signatures;
  if (!Array.isArray(list) || list.length === 0 || list.length > MAX_SIGNATURES) {
    throw new GooglePayError('malformed_token', `intermediateSigningKey.signatures must be an array of 1 to ${MAX_SIGNATURES} base64 strings`, signaturesField);
  }
  const signatures: Buffer[] = [];
  list.forEach((entry, i) => {
    const bytes = strictBase64(stringField(entry, childPath(signaturesField, i)));
    if (bytes !== undefined) signatures.push(bytes);
  });
  return { signature, signedKey, signatures, signedMessage };
}

/** Step 4: signedKey is JSON holding keyValue (base64 X.509, P-256) and keyExpiration, after `now`. Further keys are allowed, as Tink allows them. */
export function intermediateKey(signedKey: string, now: number, field: string): { key: KeyObject; expiration: number } {
  const parsed = parseJsonField(signedKey, field);
  if (!isPlainObject(parsed) || !Object.hasOwn(parsed, 'keyValue') || !Object.hasOwn(parsed, 'keyExpiration')) {
    throw new GooglePayError('malformed_token', 'signedKey must be JSON of an object with keyValue and keyExpiration', field);
  }
  const expiration = millis(parsed.keyExpiration);
  if (expiration === undefined) throw new GooglePayError('malformed_token', "signedKey's keyExpiration must be a string of milliseconds since the epoch", field);
  checkNotExpired(expiration, now, field);
  const key = p256FromSpki(base64Field(parsed.keyValue, field, "signedKey's keyValue"));
  if (key === undefined) throw new GooglePayError('malformed_token', "signedKey's keyValue is not a P-256 public key (base64 X.509 SubjectPublicKeyInfo)", field);
  return { key, expiration };
}

/** Step 4's expiry check, also for an intermediate key verified before (intermediates.ts). */
export function checkNotExpired(expiration: number, now: number, field: string): void {
  if (expiration <= now) throw new GooglePayError('expired_intermediate_key', `the intermediate signing key expired at ${isoTime(expiration)}`, field);
}

export type SealedMessage = { encryptedMessage: Buffer; ephemeralPublicKey: Buffer; tag: Buffer };

/** Step 6's parsing: signedMessage is JSON with exactly encryptedMessage, ephemeralPublicKey (an uncompressed P-256 point) and tag (32 bytes). */
export function sealedMessage(signedMessage: string, field: string): SealedMessage {
  const parsed = exactKeys(parseJsonField(signedMessage, field), field, ['encryptedMessage', 'ephemeralPublicKey', 'tag'], 'signedMessage');
  const encryptedMessage = base64Field(parsed.encryptedMessage, field, 'signedMessage.encryptedMessage');
  const ephemeralPublicKey = base64Field(parsed.ephemeralPublicKey, field, 'signedMessage.ephemeralPublicKey');
  // Whether the point is on the curve, ECDH itself checks (ecv2.ts): importing it as a key first cost as much again.
  if (ephemeralPublicKey.length !== 65 || ephemeralPublicKey[0] !== 0x04) throw notOnCurve(field);
  const tag = base64Field(parsed.tag, field, 'signedMessage.tag');
  if (tag.length !== 32) throw new GooglePayError('malformed_token', 'signedMessage.tag must be 32 bytes (HMAC-SHA256)', field);
  return { encryptedMessage, ephemeralPublicKey, tag };
}

export function notOnCurve(field: string): GooglePayError {
  return new GooglePayError('malformed_token', 'signedMessage.ephemeralPublicKey is not an uncompressed point on P-256 (65 bytes starting 0x04)', field);
}
