/**
 * Stripe's errors (docs.stripe.com/error-codes, /declines/codes) onto Coffer's error_code
 * vocabulary (../error-codes.ts). Whether an answer is a decline, a failure or unknown follows
 * from where it came from:
 * - HTTP 402 `card_error`: the issuer or Stripe's risk engine answered → the code's category
 *   (declines such as insufficient_funds → declined; processing_error → failed).
 * - 400/401/403/404/429 and `idempotency_error`: Stripe refused the request; nothing happened → failed.
 * - 409 (a request with the same idempotency key is still running), 5xx, a network failure or
 *   an unreadable answer: it may have taken effect → unknown (retry with the same key, or poll).
 */
import { type ErrorCode, errorCategory } from '../error-codes.ts';

export interface StripeErrorBody {
  type?: string;
  code?: string;
  decline_code?: string;
  message?: string;
  param?: string;
  payment_intent?: { id?: string; status?: string } & Record<string, unknown>;
  charge?: string;
}

export interface MappedError {
  status: 'declined' | 'failed' | 'unknown';
  error_code: ErrorCode;
}

/** card_declined's decline_code, and card_error codes, that are not issuer_decline. */
const DECLINE_CODES: Record<string, ErrorCode> = {
  authentication_required: 'requires_buyer_authentication',
  insufficient_funds: 'insufficient_funds',
  card_velocity_exceeded: 'insufficient_funds',
  withdrawal_count_limit_exceeded: 'insufficient_funds',
  lost_card: 'canceled_payment_method',
  stolen_card: 'canceled_payment_method',
  pickup_card: 'canceled_payment_method',
  stop_payment_order: 'canceled_payment_method',
  revocation_of_authorization: 'canceled_payment_method',
  revocation_of_all_authorizations: 'canceled_payment_method',
  restricted_card: 'unavailable_payment_method',
  fraudulent: 'suspected_fraud',
  merchant_blacklist: 'suspected_fraud',
  security_violation: 'suspected_fraud',
  expired_card: 'expired_payment_method',
  incorrect_cvc: 'incorrect_cvv',
  invalid_cvc: 'incorrect_cvv',
  incorrect_number: 'unknown_payment_method',
  invalid_number: 'unrecognised_payment_method',
  invalid_account: 'unknown_payment_method',
  new_account_information_available: 'unknown_payment_method',
  incorrect_zip: 'incorrect_billing_address',
  invalid_expiry_month: 'incorrect_expiry_date',
  invalid_expiry_year: 'incorrect_expiry_date',
  card_not_supported: 'unsupported_payment_method',
  currency_not_supported: 'unsupported_currency',
  duplicate_transaction: 'duplicate_transaction',
  invalid_amount: 'invalid_amount',
  not_permitted: 'unsupported_transaction',
  service_not_allowed: 'unsupported_transaction',
  transaction_not_allowed: 'unsupported_transaction',
  processing_error: 'service_error',
  issuer_not_available: 'other_decline',
  try_again_later: 'other_decline',
  reenter_transaction: 'other_decline',
  generic_decline: 'issuer_decline',
  do_not_honor: 'issuer_decline',
  do_not_try_again: 'issuer_decline',
  call_issuer: 'issuer_decline',
};

/** invalid_request_error codes that say more than "a parameter was wrong". */
const REQUEST_CODES: Record<string, ErrorCode> = {
  amount_too_small: 'invalid_amount',
  amount_too_large: 'invalid_amount',
  charge_already_refunded: 'refund_already_satisfied',
  charge_disputed: 'disputed_transaction',
  charge_expired_for_capture: 'expired_authorization',
  charge_already_captured: 'unexpected_state',
  payment_intent_unexpected_state: 'unexpected_state',
  resource_missing: 'unknown_service_resource',
  api_key_expired: 'invalid_service_credentials',
  secret_key_required: 'invalid_service_credentials',
  card_decline_rate_limit_exceeded: 'service_rate_limit',
  testmode_charges_only: 'invalid_service_configuration',
  payment_method_unactivated: 'invalid_service_configuration',
};

export function mapStripeError(httpStatus: number, error: StripeErrorBody | undefined): MappedError {
  if (httpStatus >= 500 || error?.type === 'api_error') return { status: 'unknown', error_code: 'service_error' };
  if (httpStatus === 409) return { status: 'unknown', error_code: 'service_resource_conflict' };
  if (httpStatus === 429) return { status: 'failed', error_code: 'service_rate_limit' };
  if (httpStatus === 401 || error?.type === 'authentication_error') return { status: 'failed', error_code: 'invalid_service_credentials' };
  if (httpStatus === 403) return { status: 'failed', error_code: 'insufficient_service_permissions' };
  if (error?.type === 'idempotency_error') return { status: 'failed', error_code: 'service_resource_conflict' };
  if (error?.type === 'card_error' || httpStatus === 402) {
    const code = (error?.code === 'card_declined' ? error.decline_code : error?.code) ?? '';
    const mapped = DECLINE_CODES[code] ?? (error?.code === 'card_declined' ? 'issuer_decline' : 'other_decline');
    return { status: errorCategory(mapped) === 'decline' ? 'declined' : 'failed', error_code: mapped };
  }
  if (httpStatus === 404) return { status: 'failed', error_code: 'unknown_service_resource' };
  if (error === undefined) return { status: 'unknown', error_code: 'invalid_service_response' };
  return { status: 'failed', error_code: REQUEST_CODES[error.code ?? ''] ?? 'invalid_request_parameters' };
}

/** A refund's failure_reason (Refund object) onto the vocabulary. */
export function mapRefundFailure(reason: string | undefined): ErrorCode {
  switch (reason) {
    case 'expired_or_canceled_card': return 'expired_payment_method';
    case 'lost_or_stolen_card': return 'canceled_payment_method';
    case 'declined': return 'issuer_decline';
    case 'charge_for_pending_refund_disputed': return 'disputed_transaction';
    case 'insufficient_funds': return 'insufficient_funds';
    default: return 'service_error';
  }
}

/**
 * A call that threw before any answer (the injected HTTP function's errors, e.g. OutboundError):
 * refused before sending (a blocked or invalid base URL, an unresolvable host) → failed; anything
 * else may have reached Stripe → unknown.
 */
export function mapTransportError(err: unknown): MappedError {
  const code = (err as { code?: unknown } | null)?.code;
  if (code === 'invalid_url' || code === 'blocked_address' || code === 'invalid_request') return { status: 'failed', error_code: 'invalid_service_configuration' };
  if (code === 'dns_failed') return { status: 'failed', error_code: 'service_network_error' };
  return { status: 'unknown', error_code: 'service_network_error' };
}
