import { GooglePayError, TOKEN_FIELD } from './errors.ts';
import { isoTime, isPlainObject, millis } from './primitives.ts';

export type GooglePayAuthMethod = 'PAN_ONLY' | 'CRYPTOGRAM_3DS';

/** A card payment read from a Google Pay token: what the decrypted ECv2 message holds, or a test-mode token's stand-in. */
export type GooglePayPayment = {
  /** True for a test-mode token (protocolVersion `Coffer`): nothing was verified or decrypted. */
  test: boolean;
  /** The tenant id the merchant's page asked for (gateway integrations); never set in test mode. */
  gatewayMerchantId?: string;
  /** Google's id of the message; in test mode `test-` and a random UUID. */
  messageId: string;
  /** Milliseconds since the epoch, as Google writes it (a string). */
  messageExpiration: string;
  paymentMethod: 'CARD';
  details: GooglePayCardDetails;
};

export type GooglePayCardDetails = {
  /** The card's number (PAN_ONLY) or the device token's number (CRYPTOGRAM_3DS): 12 to 19 digits. */
  pan: string;
  expirationMonth: number;
  expirationYear: number;
  authMethod: GooglePayAuthMethod;
  /** CRYPTOGRAM_3DS only (always set for it). */
  cryptogram?: string;
  /** CRYPTOGRAM_3DS only, when the network gave one. */
  eciIndicator?: string;
};

/**
 * The decrypted message as a payment (step 8): JSON with messageExpiration after `now`,
 * messageId, paymentMethod CARD and paymentMethodDetails. Fields Coffer does not use are
 * ignored. Errors name the payload's field but never repeat its value.
 */
export function parsePayload(plaintext: Buffer, now: number, field: string): GooglePayPayment {
  let message: unknown;
  try {
    message = JSON.parse(plaintext.toString('utf8'));
  } catch {
    throw new GooglePayError('malformed_payload', 'the decrypted message is not JSON', field);
  }
  const bad = (what: string) => new GooglePayError('malformed_payload', `the decrypted message's ${what}`, field);
  if (!isPlainObject(message)) throw bad('JSON is not an object');

  const expiration = millis(message.messageExpiration);
  if (expiration === undefined) throw bad('messageExpiration must be a string of milliseconds since the epoch');
  if (expiration <= now) throw new GooglePayError('expired_message', `the payment message expired at ${isoTime(expiration)}`, field);
  if (typeof message.messageId !== 'string' || message.messageId === '') throw bad('messageId must be a non-empty string');
  const merchant = message.gatewayMerchantId;
  if (merchant !== undefined && typeof merchant !== 'string') throw bad('gatewayMerchantId must be a string');
  if (message.paymentMethod !== 'CARD') throw bad('paymentMethod must be CARD');

  const details = message.paymentMethodDetails;
  if (!isPlainObject(details)) throw bad('paymentMethodDetails must be an object');
  return {
    test: false,
    ...(merchant !== undefined ? { gatewayMerchantId: merchant } : {}),
    messageId: message.messageId,
    messageExpiration: String(expiration),
    paymentMethod: 'CARD',
    details: cardDetails(details, bad),
  };
}

function cardDetails(details: Record<string, unknown>, bad: (what: string) => GooglePayError): GooglePayCardDetails {
  const authMethod = details.authMethod;
  if (authMethod !== 'PAN_ONLY' && authMethod !== 'CRYPTOGRAM_3DS') throw bad('paymentMethodDetails.authMethod must be PAN_ONLY or CRYPTOGRAM_3DS');
  const card = checkCard(details.pan, details.expirationMonth, details.expirationYear, (name) => bad(`paymentMethodDetails.${name}`));
  const cryptogram = details.cryptogram;
  const eci = details.eciIndicator;
  if (authMethod === 'PAN_ONLY') return { ...card, authMethod };
  if (typeof cryptogram !== 'string' || cryptogram === '') throw bad('paymentMethodDetails.cryptogram must be a non-empty string for CRYPTOGRAM_3DS');
  if (eci !== undefined && typeof eci !== 'string') throw bad('paymentMethodDetails.eciIndicator must be a string');
  return { ...card, authMethod, cryptogram, ...(eci !== undefined ? { eciIndicator: eci } : {}) };
}

/** Card number and expiry checked the same way for real and test-mode tokens; `bad(name)` builds the error for a field. */
export function checkCard(
  pan: unknown,
  month: unknown,
  year: unknown,
  bad: (what: string) => GooglePayError,
  names: { pan: string; month: string; year: string } = { pan: 'pan', month: 'expirationMonth', year: 'expirationYear' },
): { pan: string; expirationMonth: number; expirationYear: number } {
  if (typeof pan !== 'string' || !/^\d{12,19}$/.test(pan)) throw bad(`${names.pan} must be a string of 12 to 19 digits`);
  const expirationMonth = wholeNumber(month);
  if (expirationMonth === undefined || expirationMonth < 1 || expirationMonth > 12) throw bad(`${names.month} must be a month, 1 to 12`);
  const expirationYear = wholeNumber(year);
  if (expirationYear === undefined || expirationYear < 1000 || expirationYear > 9999) throw bad(`${names.year} must be a four-digit year`);
  return { pan, expirationMonth, expirationYear };
}

/** A whole number, or a string of up to 4 digits holding one (test-mode messages may write either). */
function wholeNumber(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isInteger(value) ? value : undefined;
  if (typeof value === 'string' && /^\d{1,4}$/.test(value)) return Number(value);
  return undefined;
}

/**
 * The wrong-merchant check a gateway route makes: a real token must name the caller's tenant
 * as its gatewayMerchantId, so a token a shopper made for one tenant cannot be redeemed by
 * another. Test-mode payments carry none and pass.
 */
export function assertGatewayMerchant(payment: GooglePayPayment, tenantId: string, field = `${TOKEN_FIELD}.signedMessage`): void {
  if (payment.test) return;
  if (payment.gatewayMerchantId === undefined) {
    throw new GooglePayError('wrong_merchant', 'the payment names no gatewayMerchantId; request it with gatewayMerchantId set to your tenant id', field);
  }
  // A UUID is the same id in either case.
  if (payment.gatewayMerchantId.toLowerCase() !== tenantId.toLowerCase()) {
    throw new GooglePayError('wrong_merchant', 'the payment was made for another gatewayMerchantId; request it with gatewayMerchantId set to your tenant id', field);
  }
}
