/**
 * The `error_code` vocabulary of a transaction or refund: what went wrong, in one set of words
 * whatever the processor said. Modelled on Gr4vy's normalised codes (the spec's transactions
 * section is Gr4vy's v1 API, PAYMENTS-FACTS.md §6), so a merchant who knows those knows these.
 * Each connector maps its own answers onto them (stripe/errors.ts); the raw answer is kept
 * beside the code (`raw_response_code`, `raw_response_description`).
 *
 * The category decides the transaction's status after a failed authorization: a `decline` is
 * the issuer (or the processor's risk engine) saying no → `authorization_declined`; a `failure`
 * is anything else (buyer approval, configuration, the processor's service) →
 * `authorization_failed`. `retriable` says whether the same request may succeed later.
 */

export type ErrorCategory = 'decline' | 'failure';

interface CodeInfo {
  category: ErrorCategory;
  retriable: boolean;
  description: string;
}

const decline = (retriable: boolean, description: string): CodeInfo => ({ category: 'decline', retriable, description });
const failure = (retriable: boolean, description: string): CodeInfo => ({ category: 'failure', retriable, description });

export const ERROR_CODES = {
  // Coffer's own (buyer approval, i.e. the 3DS page Coffer serves).
  incomplete_buyer_approval: failure(true, 'the buyer did not complete the approval (3DS) before it expired'),
  failed_buyer_approval: failure(true, 'the buyer failed authentication (3DS)'),
  cancelled_buyer_approval: failure(true, 'the buyer cancelled the approval'),
  requires_buyer_authentication: failure(true, 'the issuer asks for cardholder authentication (3DS); retry with a 3DS session'),
  // Declines: the issuer or the processor's risk engine said no.
  canceled_payment_method: decline(false, 'the card was reported lost, stolen or cancelled'),
  expired_authorization: decline(false, 'the authorization has expired; authorize again'),
  expired_payment_method: decline(false, 'the card has expired'),
  incorrect_billing_address: decline(false, 'the billing address does not match the account'),
  incorrect_country: decline(true, 'the country was rejected by the processor or issuer'),
  incorrect_currency: decline(true, 'the currency was rejected by the processor or issuer'),
  incorrect_cvv: decline(false, 'the CVV is incorrect'),
  incorrect_expiry_date: decline(false, 'the expiry date is incorrect'),
  insufficient_funds: decline(false, 'the amount exceeds the available balance'),
  issuer_decline: decline(true, 'the issuer declined; the buyer should contact their issuer'),
  other_decline: decline(true, 'declined for an unknown reason; may succeed if retried'),
  refused_transaction: decline(false, 'refused for legal reasons (watch list, embargo, sanctions)'),
  service_decline: decline(true, 'the processor declined'),
  suspected_fraud: decline(false, 'the processor or issuer suspects fraud'),
  // Failures: the payment method, the request, the configuration or the processor's service.
  disputed_transaction: failure(false, 'a chargeback has been initiated on the transaction'),
  duplicate_transaction: failure(false, 'the processor considers it a duplicate of an earlier transaction'),
  unavailable_payment_method: failure(false, 'the card is frozen or otherwise unavailable'),
  unknown_payment_method: failure(true, 'the account is unknown to the issuer'),
  unsupported_transaction: failure(false, 'the card does not support this kind of purchase'),
  unsupported_payment_method: failure(false, 'the processor does not support this payment method'),
  insufficient_service_permissions: failure(true, 'the connection\'s credentials lack a permission the call needs'),
  invalid_amount: failure(true, 'the amount is not supported by the processor'),
  invalid_payment_method: failure(true, 'the payment method is not supported by the processor'),
  invalid_service_configuration: failure(false, 'the connection is configured incorrectly'),
  invalid_service_credentials: failure(true, 'the connection\'s credentials are not valid'),
  invalid_service_response: failure(true, 'the processor\'s answer could not be understood'),
  invalid_tax_identifier: failure(false, 'the tax identifier is invalid'),
  missing_billing_address: failure(true, 'the processor requires a billing address'),
  missing_cvv: failure(true, 'the processor requires the CVV'),
  missing_shipping_address: failure(true, 'the processor requires a shipping address'),
  missing_tax_identifier: failure(true, 'the processor requires a tax identifier'),
  refund_period_expired: failure(false, 'the refund period has passed'),
  refund_already_satisfied: failure(false, 'the transaction is already fully refunded at the processor'),
  service_error: failure(true, 'the processor reported an internal or upstream error'),
  service_network_error: failure(true, 'the processor was unreachable or timed out'),
  service_rate_limit: failure(true, 'the processor is rate limiting the connection'),
  internal_error: failure(false, 'an internal error occurred'),
  invalid_billing_address: failure(false, 'the billing address is invalid'),
  invalid_operation: failure(true, 'the processor does not support this operation'),
  invalid_request_parameters: failure(false, 'the processor rejected a request parameter'),
  invalid_service_request: failure(true, 'the processor could not parse the request'),
  invalid_shipping_address: failure(false, 'the shipping address is invalid'),
  service_resource_conflict: failure(true, 'the processor reported a conflicting request'),
  unexpected_state: failure(false, 'the processor\'s copy of the transaction is in a state that does not allow this'),
  unknown_error: failure(false, 'an unknown error occurred'),
  unknown_service_resource: failure(true, 'the processor does not know the transaction or refund'),
  unrecognised_country: failure(false, 'the country is not valid'),
  unrecognised_currency: failure(false, 'the currency is not valid'),
  unrecognised_payment_method: failure(false, 'the payment method is not valid'),
  unrecognised_scheme: failure(false, 'the card scheme is not valid'),
  unsupported_country: failure(true, 'the country is not supported by the processor'),
  unsupported_currency: failure(true, 'the currency is not supported by the processor'),
  unsupported_scheme: failure(false, 'the card scheme is not supported by the processor'),
} as const satisfies Record<string, CodeInfo>;

export type ErrorCode = keyof typeof ERROR_CODES;

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_CODES, value);
}

export function errorCategory(code: ErrorCode): ErrorCategory {
  return ERROR_CODES[code].category;
}
