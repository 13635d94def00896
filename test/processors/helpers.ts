import { randomUUID } from 'node:crypto';
import type { AuthorizeRequest, AuthorizeResult, TransactionRef } from '../../src/processors/processor.ts';

// Past both the real clock and the test processor tests' fixed one (June 2030).
export const FUTURE_YEAR = Math.max(2040, new Date().getUTCFullYear() + 3);

/** An authorize request for a card, with a fresh idempotency key; `more` overrides anything. */
export function authorizeRequest(number: string, amount: number, more: Partial<AuthorizeRequest> = {}): AuthorizeRequest {
  return {
    amount,
    currency: 'USD',
    card: { number, expiration_month: 12, expiration_year: FUTURE_YEAR, cvc: '123' },
    merchant_initiated: false,
    payment_source: 'ecommerce',
    is_subsequent_payment: false,
    previous_scheme_transaction_id: null,
    idempotency_key: `${randomUUID()}:authorize`,
    intent: 'authorize',
    ...more,
  };
}

/** What the transactions feature would hand back to the processor about an authorized transaction. */
export function refOf(result: AuthorizeResult, amount: number, status = 'authorization_succeeded'): TransactionRef {
  return {
    connection_transaction_id: result.connection_transaction_id!,
    amount,
    currency: 'USD',
    authorized_amount: result.authorized_amount ?? amount,
    captured_amount: result.captured_amount ?? 0,
    status,
  };
}

export const THREE_DS = {
  eci: '05',
  authentication_value: 'LVJhdmVsaW4gVGVzdCBWYWx1ZS0=',
  version: '2.2.0',
  ds_transaction_id: 'f25084f0-5b16-4c0a-ae5d-b24808a95e4b',
};
