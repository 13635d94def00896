import { Type } from 'typebox';
import { Nullable, Timestamp, Uuid } from '../../http/schemas.ts';
import { REFUND_STATUSES, TRANSACTION_STATUSES } from '../../processors/index.ts';

export const PAYMENT_SOURCES = ['ecommerce', 'card_on_file', 'recurring'] as const;
/** The longest refund reason kept: enough for a support note, short of a document. */
export const MAX_REASON_LENGTH = 1000;
const MAX_AMOUNT = 99_999_999_999;

const Amount = Type.Integer({ minimum: 1, maximum: MAX_AMOUNT, description: 'Minor units (cents)' });
const Currency = Type.String({ pattern: '^[A-Z]{3}$', description: 'ISO 4217 code, upper case' });

export const CreateTransactionBody = Type.Object({
  amount: Amount,
  currency: Currency,
  connection_id: Uuid,
  token: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'A card or network token (token:use on its container, transform reveal)' })),
  token_intent_id: Type.Optional(Type.String({ format: 'uuid', description: 'A card or network token intent, instead of token' })),
  country: Type.Optional(Nullable(Type.String({ pattern: '^[A-Z]{2}$', description: 'ISO 3166-1 alpha-2' }))),
  external_identifier: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 200 }))),
  intent: Type.Optional(Nullable(Type.Enum(['authorize', 'capture'], { description: 'authorize (default): hold the funds; capture: authorize and capture at once' }))),
  is_subsequent_payment: Type.Optional(Type.Boolean({ default: false })),
  merchant_initiated: Type.Optional(Type.Boolean({ default: false })),
  metadata: Type.Optional(Nullable(Type.Record(Type.String({ maxLength: 100 }), Type.Unknown(), { maxProperties: 50 }))),
  payment_source: Type.Optional(Type.Enum(PAYMENT_SOURCES, { default: 'ecommerce' })),
  previous_scheme_transaction_id: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 100 }))),
  three_d_session_id: Type.Optional(Nullable(Type.String({ format: 'uuid', description: 'A completed 3DS session of the same card' }))),
}, { additionalProperties: false });

export const CaptureBody = Type.Object({
  amount: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_AMOUNT, description: 'At most the authorized amount; the whole authorized amount when omitted' })),
}, { additionalProperties: false });

export const RefundBody = Type.Object({
  amount: Type.Optional(Type.Integer({ description: 'Positive, at most the remaining balance; the whole remaining balance when omitted' })),
  reason: Type.Optional(Nullable(Type.String({ maxLength: MAX_REASON_LENGTH }))),
}, { additionalProperties: false });

const StatusList = Type.Array(Type.Enum(TRANSACTION_STATUSES), { maxItems: 20 });

export const ListTransactionsQuery = Type.Object({
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
  status: Type.Optional(StatusList),
  amount_gte: Type.Optional(Type.Integer({ minimum: 0 })),
  amount_lte: Type.Optional(Type.Integer({ minimum: 0 })),
  created_at_gte: Type.Optional(Timestamp),
  created_at_lte: Type.Optional(Timestamp),
  reconciliation_id: Type.Optional(Type.String({ pattern: '^[0-9A-Za-z]{1,22}$' })),
  external_identifier: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  payment_source: Type.Optional(Type.Array(Type.Enum(PAYMENT_SOURCES), { maxItems: 3 })),
  merchant_initiated: Type.Optional(Type.Boolean()),
  is_subsequent_payment: Type.Optional(Type.Boolean()),
  connection_id: Type.Optional(Uuid),
});

export const ListRefundsQuery = Type.Object({
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
});

export const TransactionParams = Type.Object({ transaction_id: Uuid });
export const RefundParams = Type.Object({ transaction_id: Uuid, refund_id: Uuid });

const ThreeDSecure = Type.Object({
  version: Type.String(),
  status: Type.Enum(['setup_error', 'error', 'declined', 'cancelled', 'complete']),
  method: Type.Enum(['challenge', 'frictionless']),
  eci: Type.Optional(Type.String()),
  session_id: Type.Optional(Uuid),
  error_data: Type.Optional(Type.Object({ description: Type.String(), code: Type.String() })),
});

export const TransactionSchema = Type.Object({
  type: Type.Literal('transaction'),
  id: Uuid,
  status: Type.Enum(TRANSACTION_STATUSES),
  intent: Type.Enum(['authorize', 'capture']),
  intent_outcome: Type.Enum(['pending', 'succeeded', 'failed']),
  amount: Type.Integer(),
  currency: Type.String(),
  authorized_amount: Type.Integer(),
  captured_amount: Type.Integer(),
  refunded_amount: Type.Integer(),
  country: Nullable(Type.String()),
  external_identifier: Nullable(Type.String()),
  metadata: Nullable(Type.Record(Type.String(), Type.Unknown())),
  payment_source: Type.String(),
  merchant_initiated: Type.Boolean(),
  is_subsequent_payment: Type.Boolean(),
  previous_scheme_transaction_id: Nullable(Type.String()),
  payment_method: Type.Object({
    type: Type.Literal('card'),
    token: Type.Optional(Type.String()),
    token_intent_id: Type.Optional(Type.String()),
    scheme: Nullable(Type.String()),
    last4: Type.String(),
    expiration_date: Nullable(Type.String({ description: 'MM/YY' })),
    approval_url: Type.Optional(Type.String({ description: 'buyer_approval_pending: the page the buyer must visit (3DS)' })),
  }),
  connection: Type.Object({ id: Uuid, processor: Type.String() }),
  reconciliation_id: Type.String(),
  error_code: Nullable(Type.String()),
  auth_response_code: Nullable(Type.String()),
  cvv_response_code: Nullable(Type.String()),
  avs_response_code: Nullable(Type.String()),
  raw_response_code: Nullable(Type.String()),
  raw_response_description: Nullable(Type.String()),
  connection_transaction_id: Nullable(Type.String()),
  scheme_transaction_id: Nullable(Type.String()),
  three_d_secure: Nullable(ThreeDSecure),
  authorized_at: Nullable(Timestamp),
  captured_at: Nullable(Timestamp),
  voided_at: Nullable(Timestamp),
  approval_expires_at: Nullable(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const RefundSchema = Type.Object({
  type: Type.Literal('refund'),
  id: Uuid,
  transaction_id: Uuid,
  connection_refund_id: Nullable(Type.String()),
  status: Type.Enum(REFUND_STATUSES),
  currency: Type.String(),
  amount: Type.Integer(),
  reason: Nullable(Type.String()),
  error_code: Nullable(Type.String()),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const RefundPage = Type.Object({
  pagination: Type.Object({ limit: Type.Integer(), next_cursor: Nullable(Type.String()), previous_cursor: Nullable(Type.String()) }),
  data: Type.Array(RefundSchema),
});

export const TransactionPage = Type.Object({
  pagination: Type.Object({ limit: Type.Integer(), next_cursor: Nullable(Type.String()), previous_cursor: Nullable(Type.String()) }),
  data: Type.Array(TransactionSchema),
});

export type CreateTransactionInput = {
  amount: number;
  currency: string;
  connection_id: string;
  token?: string;
  token_intent_id?: string;
  country?: string | null;
  external_identifier?: string | null;
  intent?: 'authorize' | 'capture' | null;
  is_subsequent_payment?: boolean;
  merchant_initiated?: boolean;
  metadata?: Record<string, unknown> | null;
  payment_source?: (typeof PAYMENT_SOURCES)[number];
  previous_scheme_transaction_id?: string | null;
  three_d_session_id?: string | null;
};
