import { createDecipheriv, createECDH, createHmac, createSecretKey, type ECDH, hkdfSync, type KeyObject, timingSafeEqual } from 'node:crypto';
import { childPath } from '../http/field-path.ts';
import { GooglePayError, TOKEN_FIELD } from './errors.ts';
import { type GooglePayPayment, parsePayload } from './payload.ts';
import type { VerifiedIntermediates } from './intermediates.ts';
import { isP256, lengthValue, verifiesUnderInPool } from './primitives.ts';
import { type RootKey, usableRootKeys } from './root-keys.ts';
import { checkNotExpired, ECV2, ecv2Parts, intermediateKey, notOnCurve, type SealedMessage, sealedMessage, tokenObject } from './token.ts';

/**
 * Google Pay ECv2 for a recipient, in the 8 steps of PAYMENTS-FACTS §2 (after Tink's
 * PaymentMethodTokenRecipient): check the shape, verify the intermediate signing key under a
 * root key, check its expiry, verify the message under it for our recipient id, derive the keys
 * from the ephemeral key, check the tag, decrypt, check the message's expiry.
 */

const SENDER_ID = 'Google';
/** HKDF's info for ECv2, as for ECv1. */
const HKDF_INFO = Buffer.from('Google');
const NO_SALT = Buffer.alloc(0);
const ZERO_IV = Buffer.alloc(16);

export type DecryptOptions = {
  /** Google's root signing keys (RootKeySource.get); expired and non-ECv2 ones are ignored here too. */
  rootKeys: readonly RootKey[];
  /** The recipient's P-256 private keys; each is tried, so a rotated-out key still opens tokens sealed for it. */
  privateKeys: readonly KeyObject[];
  /** `gateway:<gateway id>` for a gateway (Coffer: `gateway:coffer`), `merchant:<id>` for a merchant. */
  recipientId: string;
  /** Milliseconds since the epoch, against which every expiry is checked. */
  now: number;
  /** Where the token is in the request, for the errors' field paths; default google_payment_method_token. */
  field?: string;
  /** Intermediate keys verified before, kept across tokens (one per process); none: each token is checked in full. */
  intermediates?: VerifiedIntermediates;
  /**
   * How each ECDSA signature is checked; default verifiesUnderInPool (libuv's thread pool, so
   * the event loop only hands it over). A decryption worker thread passes verifiesUnder: it is
   * off the event loop already, and the hand-over would cost more than it saves there.
   */
  verify?: (key: KeyObject, data: Buffer, signature: Buffer) => boolean | Promise<boolean>;
};

/**
 * An ECv2 token (an object, or its JSON text) verified and decrypted into a payment. Every
 * failure is a GooglePayError with a specific code; nothing of the plaintext is ever in one.
 */
export async function decryptEcv2(token: unknown, options: DecryptOptions): Promise<GooglePayPayment> {
  const { now, recipientId, intermediates } = options;
  const verify = options.verify ?? verifiesUnderInPool;
  const field = options.field ?? TOKEN_FIELD;
  // Step 1: the shape.
  const parts = ecv2Parts(tokenObject(token, field), field);
  const intermediateField = childPath(field, 'intermediateSigningKey');
  const signedKeyField = childPath(intermediateField, 'signedKey');
  const messageField = childPath(field, 'signedMessage');

  // Steps 2 and 3: one of the signatures, by one of the usable root keys, over the signed key.
  const roots = usableRootKeys(options.rootKeys, now);
  if (roots.length === 0) throw new GooglePayError('no_valid_root_key', 'no Google root signing key for ECv2 is valid now');
  const signatures = parts.signatures.map((bytes) => bytes.toString('base64'));
  const known = roots.find((root) => signatures.some((signature) => intermediates?.verified(parts.signedKey, root.key, signature)));
  let signer: { root: KeyObject; signature: string } | undefined = known && { root: known.key, signature: '' };
  if (!signer) {
    const signedKeyBytes = lengthValue(SENDER_ID, ECV2, parts.signedKey);
    search: for (const root of roots) {
      for (const [i, signature] of parts.signatures.entries()) {
        if (await verify(root.key, signedKeyBytes, signature)) {
          signer = { root: root.key, signature: signatures[i] };
          break search;
        }
      }
    }
  }
  if (!signer) {
    throw new GooglePayError('bad_intermediate_signature', "no entry of intermediateSigningKey.signatures verifies under Google's root signing keys", childPath(intermediateField, 'signatures'));
  }

  // Step 4: the intermediate key, not expired.
  const cached = intermediates?.get(parts.signedKey);
  let intermediate: KeyObject;
  if (cached) {
    checkNotExpired(cached.expiration, now, signedKeyField);
    intermediate = cached.key;
  } else {
    const parsed = intermediateKey(parts.signedKey, now, signedKeyField);
    intermediate = parsed.key;
    if (signer.signature) intermediates?.remember(parts.signedKey, parsed.key, parsed.expiration, signer.root, signer.signature);
  }

  // Step 5: the message signature, for this recipient.
  if (!(await verify(intermediate, lengthValue(SENDER_ID, recipientId, ECV2, parts.signedMessage), parts.signature))) {
    throw new GooglePayError('bad_message_signature', `signature does not verify under the intermediate signing key for recipient ${recipientId}`, childPath(field, 'signature'));
  }

  // Steps 6 and 7: the keys from ECDH with the ephemeral key, the tag, then the plaintext.
  if (options.privateKeys.length === 0) throw noRecipientKey();
  const sealed = sealedMessage(parts.signedMessage, messageField);
  const plaintext = openWithAny(sealed, options.privateKeys, messageField);
  if (plaintext === undefined) {
    throw new GooglePayError('tag_mismatch', "signedMessage's tag does not match its encryptedMessage under Coffer's private keys: the token was sealed for another public key, or altered", messageField);
  }

  // Step 8: the payment, not expired.
  return parsePayload(plaintext, now, messageField);
}

export function noRecipientKey(): GooglePayError {
  return new GooglePayError('no_recipient_key', 'Coffer has no Google Pay private key (GOOGLE_PAY_PRIVATE_KEYS), so it can read only test-mode tokens');
}

/**
 * An ECDH object per private key, made once: computing with the raw point the token carries
 * skips importing it as a key object and Node's checks of both keys' curves, which cost more
 * than the ECDH itself. It still refuses a point that is not on the curve.
 */
const ecdhOf = new WeakMap<KeyObject, ECDH | null>();
/** Null for a key that is not a P-256 private key: passed over, as no token can be sealed for it. */
function ecdhFor(privateKey: KeyObject): ECDH | null {
  let ecdh = ecdhOf.get(privateKey);
  if (ecdh === undefined) {
    ecdh = null;
    if (privateKey.type === 'private' && isP256(privateKey)) {
      ecdh = createECDH('prime256v1');
      ecdh.setPrivateKey(Buffer.from(privateKey.export({ format: 'jwk' }).d!, 'base64url'));
    }
    ecdhOf.set(privateKey, ecdh);
  }
  return ecdh;
}

/** The plaintext, opened by the first private key under which the tag matches; undefined if none does. */
function openWithAny(sealed: SealedMessage, privateKeys: readonly KeyObject[], field: string): Buffer | undefined {
  for (const privateKey of privateKeys) {
    const ecdh = ecdhFor(privateKey);
    if (!ecdh) continue;
    let shared: Buffer;
    try {
      shared = ecdh.computeSecret(sealed.ephemeralPublicKey);
    } catch {
      throw notOnCurve(field);
    }
    // Secret key objects rather than bytes: Node checks a byte key far more slowly than it
    // computes these few blocks (each of the three steps cost 3 to 4 times as much with bytes).
    const derived = Buffer.from(hkdfSync('sha256', createSecretKey(Buffer.concat([sealed.ephemeralPublicKey, shared])), NO_SALT, HKDF_INFO, 64));
    const expected = createHmac('sha256', createSecretKey(derived.subarray(32))).update(sealed.encryptedMessage).digest();
    if (!timingSafeEqual(expected, sealed.tag)) continue;
    const decipher = createDecipheriv('aes-256-ctr', createSecretKey(derived.subarray(0, 32)), ZERO_IV);
    return Buffer.concat([decipher.update(sealed.encryptedMessage), decipher.final()]);
  }
  return undefined;
}
