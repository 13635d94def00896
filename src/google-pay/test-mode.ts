import { randomUUID } from 'node:crypto';
import { childPath } from '../http/field-path.ts';
import { GooglePayError, TOKEN_FIELD } from './errors.ts';
import { checkCard, type GooglePayPayment } from './payload.ts';
import { exactKeys, isPlainObject, parseJsonField } from './primitives.ts';

/**
 * Test mode (SPEC "Google Pay"): a token whose protocolVersion is `Coffer` is a stand-in for a
 * real one, read without any cryptography. `signature` says what it stands for — `card` (a
 * PAN_ONLY payment) or `network_token` (CRYPTOGRAM_3DS) — and `signedMessage` holds the card in
 * plain JSON: `number`, `expiration_month`, `expiration_year` (numbers or numeric strings), and
 * for a network token `cryptogram` and, optionally, `eci_indicator`. `intermediateSigningKey`
 * may hold anything. There is no gatewayMerchantId to check: the caller chose the card itself.
 */

export const TEST_PROTOCOL_VERSION = 'Coffer';

/** How long a test-mode payment's messageExpiration lies ahead: it has none of its own. */
const TEST_MESSAGE_TTL_MS = 3_600_000;

/** True when `token` (an object, or its JSON text) claims to be a test-mode token. */
export function isTestToken(token: unknown): boolean {
  if (typeof token === 'string') {
    try {
      token = JSON.parse(token);
    } catch {
      return false;
    }
  }
  return isPlainObject(token) && token.protocolVersion === TEST_PROTOCOL_VERSION;
}

/** A test-mode token read into the same payment shape a real one gives (with `test: true`). */
export function decodeTestToken(token: unknown, now: number, field = TOKEN_FIELD): GooglePayPayment {
  const value = typeof token === 'string' ? parseJsonField(token, field) : token;
  const fields = exactKeys(value, field, ['protocolVersion', 'signature', 'intermediateSigningKey', 'signedMessage']);
  const signatureField = childPath(field, 'signature');
  const kind = fields.signature;
  if (kind !== 'card' && kind !== 'network_token') {
    throw new GooglePayError('malformed_token', `in test mode, signature must be card or network_token`, signatureField);
  }
  const messageField = childPath(field, 'signedMessage');
  const raw = fields.signedMessage;
  const message = typeof raw === 'string' ? parseJsonField(raw, messageField) : raw;
  if (!isPlainObject(message)) throw new GooglePayError('malformed_token', 'in test mode, signedMessage must be JSON of an object', messageField);
  const bad = (what: string) => new GooglePayError('malformed_token', `in test mode, signedMessage's ${what}`, messageField);
  const card = checkCard(message.number, message.expiration_month, message.expiration_year, bad, {
    pan: 'number', month: 'expiration_month', year: 'expiration_year',
  });
  const payment = { test: true, messageId: `test-${randomUUID()}`, messageExpiration: String(now + TEST_MESSAGE_TTL_MS), paymentMethod: 'CARD' } as const;
  if (kind === 'card') return { ...payment, details: { ...card, authMethod: 'PAN_ONLY' } };

  const { cryptogram, eci_indicator: eci } = message;
  if (typeof cryptogram !== 'string' || cryptogram === '') throw bad('cryptogram must be a non-empty string for a network_token');
  if (eci !== undefined && typeof eci !== 'string') throw bad('eci_indicator must be a string');
  return { ...payment, details: { ...card, authMethod: 'CRYPTOGRAM_3DS', cryptogram, ...(eci !== undefined ? { eciIndicator: eci } : {}) } };
}
