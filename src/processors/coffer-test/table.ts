/**
 * The test processor's outcomes: THE table, keyed on the amount and the card. docs/orchestration.md
 * ("The test processor") prints the same rows, and test/processors/coffer-test.test.ts checks both
 * against each other and every row against the processor.
 *
 * - Amounts (minor units) are Gr4vy's sandbox simulator amounts (PAYMENTS-FACTS.md §6,
 *   api-evangelist/gr4vy errors/gr4vy-decline-codes.yml): 2000xx declines and failures of the
 *   authorization, 3000xx/4000xx failures, 5000xx capture, 5100xx void and 5200xx refund
 *   failures. A capture, void or refund outcome is keyed on the transaction's amount (the one it
 *   was created with), so "create 520002, capture, refund" exercises a declined refund.
 * - Cards are Stripe's documented test cards (docs.stripe.com/testing) and behave as there.
 * - The amount decides first; the card only when the amount is in no row.
 * - Asynchronous range: amounts 600000–600999 capture (and refund) asynchronously.
 *
 * Rules outside the rows: a card past its expiry month is declined (expired_payment_method, 54);
 * every other card and amount is approved (00). CVV: the row's code when it has one, else `match`
 * when a CVC is sent and `not_provided` without; AVS likewise (`match` when a billing address
 * is sent). A row's codes stand for the issuer's answer, so they are reported whatever is sent.
 */
import type { ErrorCode } from '../error-codes.ts';
import type { AvsResponseCode, CvvResponseCode } from '../processor.ts';

export type Operation = 'authorize' | 'capture' | 'void' | 'refund';

export type Outcome =
  | 'approved'                // authorize: authorized / captured
  | 'declined'
  | 'failed'
  | 'requires_authentication' // buyer approval (3DS) unless 3DS data is sent; merchant-initiated → failed
  | 'asynchronous';           // capture → capture_pending, refund → processing, settled after the delay

export type RowKey = { amount: number } | { card: string } | { amounts: readonly [number, number] };

export interface OutcomeRow {
  key: RowKey;
  operation: Operation;
  outcome: Outcome;
  error_code?: ErrorCode;
  /** ISO 8583 field 39, when the issuer answered. */
  auth_response_code?: string;
  cvv_response_code?: CvvResponseCode;
  avs_response_code?: AvsResponseCode;
  /** The failure is the issuer's demand for authentication: sending 3DS data approves instead. */
  cleared_by_3ds?: boolean;
  note: string;
}

export const ASYNC_AMOUNTS = [600_000, 600_999] as const;

const declined = (amount: number, error_code: ErrorCode, auth_response_code: string | undefined, note: string, more: Partial<OutcomeRow> = {}): OutcomeRow => ({
  key: { amount }, operation: 'authorize', outcome: 'declined', error_code, auth_response_code, note, ...more,
});
const failed = (amount: number, error_code: ErrorCode, note: string, more: Partial<OutcomeRow> = {}): OutcomeRow => ({
  key: { amount }, operation: 'authorize', outcome: 'failed', error_code, note, ...more,
});
const follow = (operation: Operation, amount: number, outcome: 'declined' | 'failed', error_code: ErrorCode, note: string): OutcomeRow => ({
  key: { amount }, operation, outcome, error_code, note,
});
const card = (number: string, outcome: Outcome, note: string, more: Partial<OutcomeRow> = {}): OutcomeRow => ({
  key: { card: number }, operation: 'authorize', outcome, note, ...more,
});

export const OUTCOME_TABLE: readonly OutcomeRow[] = [
  // Authorization declines (→ authorization_declined).
  declined(200001, 'canceled_payment_method', '43', 'card reported lost, stolen or cancelled'),
  declined(200004, 'expired_authorization', '05', 'authorization expired'),
  declined(200005, 'expired_payment_method', '54', 'expired card'),
  declined(200006, 'incorrect_billing_address', '05', 'billing address mismatch', { avs_response_code: 'no_match' }),
  declined(200007, 'incorrect_country', '57', 'country rejected'),
  declined(200008, 'incorrect_currency', '12', 'currency rejected'),
  declined(200009, 'incorrect_cvv', 'N7', 'CVV mismatch', { cvv_response_code: 'no_match' }),
  declined(200010, 'incorrect_expiry_date', '54', 'wrong expiry date'),
  declined(200011, 'insufficient_funds', '51', 'insufficient funds'),
  declined(200012, 'issuer_decline', '05', 'do not honour'),
  declined(200013, 'other_decline', '05', 'declined, reason unknown'),
  declined(200015, 'refused_transaction', '93', 'refused: violation of law'),
  declined(200016, 'service_decline', undefined, 'declined by the processor, not sent to the issuer'),
  declined(200017, 'suspected_fraud', '59', 'suspected fraud'),
  // Authorization failures (→ authorization_failed).
  failed(200002, 'disputed_transaction', 'chargeback initiated'),
  failed(200003, 'duplicate_transaction', 'duplicate transaction', { auth_response_code: '94' }),
  failed(200014, 'requires_buyer_authentication', 'soft decline: authenticate (3DS) and retry', { auth_response_code: '1A', cleared_by_3ds: true }),
  failed(200018, 'unavailable_payment_method', 'card frozen', { auth_response_code: '62' }),
  failed(200019, 'unknown_payment_method', 'no such account', { auth_response_code: '14' }),
  failed(200020, 'unsupported_transaction', 'purchase type not allowed for the card', { auth_response_code: '57' }),
  failed(200021, 'unsupported_payment_method', 'payment method not supported'),
  failed(200022, 'cancelled_buyer_approval', 'buyer cancelled'),
  failed(300001, 'insufficient_service_permissions', 'credentials lack a permission'),
  failed(300002, 'invalid_amount', 'amount not supported'),
  failed(300003, 'invalid_payment_method', 'payment method not supported by the service'),
  failed(300004, 'invalid_service_configuration', 'service misconfigured'),
  failed(300005, 'invalid_service_credentials', 'credentials invalid'),
  failed(300006, 'invalid_service_response', 'unparseable service response'),
  failed(300007, 'invalid_tax_identifier', 'tax identifier invalid'),
  failed(300008, 'missing_billing_address', 'billing address required'),
  failed(300009, 'missing_cvv', 'CVV required'),
  failed(300010, 'missing_shipping_address', 'shipping address required'),
  failed(300011, 'missing_tax_identifier', 'tax identifier required'),
  failed(300012, 'refund_period_expired', 'refund period expired'),
  failed(300013, 'service_error', 'service internal error'),
  failed(300014, 'service_network_error', 'service unreachable'),
  failed(300015, 'service_rate_limit', 'service rate limit'),
  failed(400001, 'internal_error', 'internal error'),
  failed(400002, 'invalid_billing_address', 'billing address invalid'),
  failed(400003, 'invalid_operation', 'operation not supported'),
  failed(400004, 'invalid_request_parameters', 'request parameter invalid'),
  failed(400005, 'invalid_service_request', 'request unparseable'),
  failed(400006, 'invalid_shipping_address', 'shipping address invalid'),
  failed(400007, 'service_resource_conflict', 'conflicting request'),
  failed(400008, 'unexpected_state', 'service in an unexpected state'),
  failed(400009, 'unknown_error', 'unknown error'),
  failed(400010, 'unknown_service_resource', 'resource unknown to the service'),
  failed(400011, 'unsupported_country', 'country not supported'),
  failed(400012, 'unsupported_currency', 'currency not supported'),
  failed(400013, 'unrecognised_country', 'country not valid'),
  failed(400014, 'unrecognised_currency', 'currency not valid'),
  failed(400015, 'unrecognised_payment_method', 'payment method not valid'),
  failed(400016, 'unrecognised_scheme', 'scheme not valid'),
  failed(400017, 'unsupported_scheme', 'scheme not supported'),
  // Follow-up failures, keyed on the transaction's amount: its authorization succeeds.
  follow('capture', 500001, 'failed', 'service_network_error', 'capture: service unreachable'),
  follow('capture', 500002, 'declined', 'refused_transaction', 'capture: refused'),
  follow('void', 510001, 'failed', 'service_network_error', 'void: service unreachable'),
  follow('void', 510002, 'declined', 'issuer_decline', 'void: declined by the issuer'),
  follow('refund', 520001, 'failed', 'disputed_transaction', 'refund: chargeback initiated'),
  follow('refund', 520002, 'declined', 'issuer_decline', 'refund: declined by the issuer'),
  follow('refund', 520003, 'failed', 'service_error', 'refund: service internal error'),
  follow('refund', 520004, 'failed', 'refund_already_satisfied', 'refund: already fully refunded at the processor'),
  // Asynchronous settlement.
  { key: { amounts: ASYNC_AMOUNTS }, operation: 'capture', outcome: 'asynchronous', note: 'capture (or intent capture) → capture_pending; a status poll after the delay → captured' },
  { key: { amounts: ASYNC_AMOUNTS }, operation: 'refund', outcome: 'asynchronous', note: 'refund → processing; a refund status poll after the delay → succeeded' },
  // Test cards, for amounts in no row above.
  card('4242424242424242', 'approved', 'success', { auth_response_code: '00' }),
  card('4000000000000002', 'declined', 'generic decline', { error_code: 'issuer_decline', auth_response_code: '05' }),
  card('4000000000009995', 'declined', 'insufficient funds', { error_code: 'insufficient_funds', auth_response_code: '51' }),
  card('4000000000003220', 'requires_authentication', 'needs 3DS: buyer approval, or approved with 3DS data', {
    error_code: 'requires_buyer_authentication', auth_response_code: '1A', cleared_by_3ds: true,
  }),
  card('4000000000000127', 'declined', 'CVV mismatch', { error_code: 'incorrect_cvv', auth_response_code: 'N7', cvv_response_code: 'no_match' }),
  card('4000000000000069', 'declined', 'expired card', { error_code: 'expired_payment_method', auth_response_code: '54' }),
  card('4000000000000119', 'failed', 'processing error', { error_code: 'service_error', auth_response_code: '96' }),
  card('4000000000000101', 'approved', 'approved although the CVV does not match', { auth_response_code: '00', cvv_response_code: 'no_match' }),
  card('4000000000000010', 'approved', 'approved; AVS: street and postal code fail', { auth_response_code: '00', avs_response_code: 'no_match' }),
  card('4000000000000028', 'approved', 'approved; AVS: street fails, postal code matches', { auth_response_code: '00', avs_response_code: 'partial_match_postcode' }),
  card('4000000000000036', 'approved', 'approved; AVS: postal code fails, street matches', { auth_response_code: '00', avs_response_code: 'partial_match_address' }),
  card('4000000000000044', 'approved', 'approved; AVS unavailable', { auth_response_code: '00', avs_response_code: 'unavailable' }),
];

export function isAsyncAmount(amount: number): boolean {
  return amount >= ASYNC_AMOUNTS[0] && amount <= ASYNC_AMOUNTS[1];
}

const BY_AMOUNT = new Map<string, OutcomeRow>();
const BY_CARD = new Map<string, OutcomeRow>();
for (const row of OUTCOME_TABLE) {
  if ('amount' in row.key) BY_AMOUNT.set(`${row.operation}:${row.key.amount}`, row);
  else if ('card' in row.key) BY_CARD.set(row.key.card, row);
}

/** The row that decides an operation: by the amount first, then (authorize only) by the card. */
export function rowFor(operation: Operation, amount: number, cardNumber?: string): OutcomeRow | undefined {
  const byAmount = BY_AMOUNT.get(`${operation}:${amount}`);
  if (byAmount) return byAmount;
  if ((operation === 'capture' || operation === 'refund') && isAsyncAmount(amount)) {
    return OUTCOME_TABLE.find((row) => row.operation === operation && row.outcome === 'asynchronous');
  }
  return operation === 'authorize' && cardNumber !== undefined ? BY_CARD.get(cardNumber) : undefined;
}
