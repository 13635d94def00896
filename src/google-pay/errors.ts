import { ApiError } from '../http/errors.ts';

/**
 * Why a Google Pay payment token was not turned into a payment. Messages are safe to show the
 * caller and to log: they name fields, expiry times and the recipient id, never a PAN, a
 * cryptogram or a key.
 */
export type GooglePayErrorCode =
  /** The token is not the JSON an ECv2 token is: keys missing or extra, a wrong type, bad base64, a key that is not P-256. */
  | 'malformed_token'
  /** protocolVersion is neither ECv2 nor the test value `Coffer`. */
  | 'unsupported_protocol'
  /** A test-mode token (protocolVersion `Coffer`) while GOOGLE_PAY_TEST_MODE is off. */
  | 'test_mode_disabled'
  /** Google's keys list holds no ECv2 root signing key that has not expired. */
  | 'no_valid_root_key'
  /** Google's root signing keys could not be fetched or read. */
  | 'root_keys_unavailable'
  /** The thread decrypting the token stopped before it answered (decrypt-pool.ts): the request may be sent again at once. */
  | 'decryption_unavailable'
  /** No entry of intermediateSigningKey.signatures verifies under a root signing key. */
  | 'bad_intermediate_signature'
  | 'expired_intermediate_key'
  /** `signature` does not verify under the intermediate key for this recipient id. */
  | 'bad_message_signature'
  /** No recipient private key is configured (GOOGLE_PAY_PRIVATE_KEYS): only test-mode tokens can be read. */
  | 'no_recipient_key'
  /** The tag does not match under any configured private key: sealed for another key, or altered. */
  | 'tag_mismatch'
  | 'expired_message'
  /** The decrypted message is not the payment JSON Google sends (or not one Coffer supports). */
  | 'malformed_payload'
  /** gatewayMerchantId is not the caller's tenant id (checked by the caller: assertGatewayMerchant). */
  | 'wrong_merchant';

/** The body field that holds the token, as the spec names it: every token field path starts with it. */
export const TOKEN_FIELD = 'google_payment_method_token';

export class GooglePayError extends Error {
  readonly code: GooglePayErrorCode;
  /** Where in the request the problem lies (`google_payment_method_token.signedMessage`); undefined for problems of Coffer's own (keys). */
  readonly field: string | undefined;

  constructor(code: GooglePayErrorCode, message: string, field?: string) {
    super(message);
    this.name = 'GooglePayError';
    this.code = code;
    this.field = field;
  }
}

/** Problems that are Coffer's, not the caller's: the caller may retry later. */
const UNAVAILABLE: ReadonlySet<GooglePayErrorCode> = new Set(['no_valid_root_key', 'root_keys_unavailable', 'decryption_unavailable']);

/**
 * The problem a route answers with: 400 naming the field (under `at`, the request part that
 * holds the token) for what is wrong with the token,
 * 422 when Coffer has no private key to read real tokens with, 503 with Retry-After when
 * Google's root keys cannot be had (60 s) or the thread decrypting the token stopped (1 s). The code leads the message so a client can tell the cases apart.
 */
export function googlePayApiError(err: GooglePayError, at = 'body'): ApiError {
  const detail = `${err.code}: ${err.message}`;
  if (UNAVAILABLE.has(err.code)) {
    const unavailable = new ApiError(503, detail);
    unavailable.retryAfterSeconds = err.code === 'decryption_unavailable' ? 1 : 60;
    return unavailable;
  }
  if (err.code === 'no_recipient_key') return ApiError.unprocessable(detail);
  return ApiError.field(`${at}.${err.field ?? TOKEN_FIELD}`, detail);
}
