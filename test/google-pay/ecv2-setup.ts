import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { decryptEcv2, type DecryptOptions, type GooglePayError, type RootKey } from '../../src/google-pay/index.ts';
import { type Ecv2Token, googlePayWorld, paymentPayload, signIntermediate, signMessage } from '../helpers/google-pay-seal.ts';
import { rejectsGooglePay } from './helpers.ts';

/** One stand-in Google and recipient for the ECv2 tests, and ways to change one part of a token and sign the rest again. */

export const NOW = Date.parse('2026-11-28T12:00:00Z');
export const HOUR = 3_600_000;
export const world = googlePayWorld('gateway:coffer');
export const PAN = '4111111111111111';
export const CRYPTOGRAM = 'AgAAAAAABk4DWZ4C28yUQAAAAAA=';
const SECRETS = [PAN, CRYPTOGRAM];
export const root: RootKey = { protocolVersion: 'ECv2', keyExpiration: NOW + 365 * 24 * HOUR, key: world.root.publicKey };
export const options: DecryptOptions = { rootKeys: [root], privateKeys: [world.recipient.privateKey], recipientId: world.recipientId, now: NOW };
export const T = 'google_payment_method_token';

export function seal(payload: Record<string, unknown> = paymentPayload({ now: NOW, gatewayMerchantId: 'tenant-1' }), o = {}): Ecv2Token {
  return world.seal(payload, { now: NOW, ...o });
}

/** `token` with its signedKey replaced, signed again by the root key so only the change is under test. */
export function withSignedKey(token: Ecv2Token, signedKey: string): Ecv2Token {
  return { ...token, intermediateSigningKey: { signedKey, signatures: [signIntermediate(world.root.privateKey, signedKey)] } };
}

/** `token` with its signedMessage replaced, signed again by the intermediate key for our recipient. */
export function withSignedMessage(token: Ecv2Token, signedMessage: string): Ecv2Token {
  return { ...token, signedMessage, signature: signMessage(world.intermediate.privateKey, world.recipientId, signedMessage) };
}

export function decrypt(token: unknown, o: Partial<DecryptOptions> = {}) {
  return decryptEcv2(token, { ...options, ...o });
}

/** decrypt fails with `code` (and `field`), naming neither the card number nor the cryptogram. */
export function fails(token: unknown, code: GooglePayError['code'], field?: string, o: Partial<DecryptOptions> = {}): Promise<GooglePayError> {
  return rejectsGooglePay(() => decrypt(token, o), code, field, SECRETS);
}

export function otherCurveKeys(): { p384: KeyObject; rsa: KeyObject } {
  return { p384: generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey, rsa: generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey };
}
