import { intentOutcome, reconciliationId } from '../../processors/index.ts';
import { iso } from '../../http/schemas.ts';
import type { RefundRow, TransactionRow } from './store.ts';

export function presentTransaction(row: TransactionRow) {
  return {
    type: 'transaction' as const,
    id: row.id,
    status: row.status,
    intent: row.intent,
    intent_outcome: intentOutcome(row.status, row.intent),
    amount: row.amount,
    currency: row.currency,
    authorized_amount: row.authorized_amount,
    captured_amount: row.captured_amount,
    refunded_amount: row.refunded_amount,
    country: row.country,
    external_identifier: row.external_identifier,
    metadata: row.metadata,
    payment_source: row.payment_source,
    merchant_initiated: row.merchant_initiated,
    is_subsequent_payment: row.is_subsequent_payment,
    previous_scheme_transaction_id: row.previous_scheme_transaction_id,
    payment_method: row.payment_method,
    connection: { id: row.connection_id, processor: row.processor },
    reconciliation_id: reconciliationId(row.id),
    error_code: row.error_code,
    auth_response_code: row.auth_response_code,
    cvv_response_code: row.cvv_response_code,
    avs_response_code: row.avs_response_code,
    raw_response_code: row.raw_response_code,
    raw_response_description: row.raw_response_description,
    connection_transaction_id: row.connection_transaction_id,
    scheme_transaction_id: row.scheme_transaction_id,
    three_d_secure: row.three_d_secure as never,
    authorized_at: iso(row.authorized_at) ?? null,
    captured_at: iso(row.captured_at) ?? null,
    voided_at: iso(row.voided_at) ?? null,
    approval_expires_at: iso(row.approval_expires_at) ?? null,
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  };
}

export function presentRefund(row: RefundRow) {
  return {
    type: 'refund' as const,
    id: row.id,
    transaction_id: row.transaction_id,
    connection_refund_id: row.connection_refund_id,
    status: row.status,
    currency: row.currency,
    amount: row.amount,
    reason: row.reason,
    error_code: row.error_code,
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  };
}
