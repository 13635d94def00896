import type { Database, Tx } from '../../db/database.ts';
import type { Statement } from '../../db/group-commit.ts';
import type { Intent, PaymentSource } from '../../processors/index.ts';
import type { RefundStatus, TransactionStatus } from '../../processors/index.ts';

/** The processor call in flight (the outbox entry): written before the call, cleared with its outcome. */
export type PendingCall = { operation: 'authorize' | 'capture' | 'void'; key: string; amount?: number };

export type PaymentMethod = {
  type: 'card';
  /** The card token, or the token intent, the payment was made with. */
  token?: string;
  token_intent_id?: string;
  scheme: string | null;
  last4: string;
  expiration_date: string | null;
  approval_url?: string;
};

export type TransactionRow = {
  tenant_id: string;
  id: string;
  connection_id: string;
  processor: string;
  status: TransactionStatus;
  intent: Intent;
  amount: number;
  currency: string;
  authorized_amount: number;
  captured_amount: number;
  refunded_amount: number;
  country: string | null;
  external_identifier: string | null;
  metadata: Record<string, unknown> | null;
  payment_source: PaymentSource;
  merchant_initiated: boolean;
  is_subsequent_payment: boolean;
  previous_scheme_transaction_id: string | null;
  payment_method: PaymentMethod;
  three_d_session_id: string | null;
  three_d_secure: Record<string, unknown> | null;
  error_code: string | null;
  auth_response_code: string | null;
  cvv_response_code: string | null;
  avs_response_code: string | null;
  raw_response_code: string | null;
  raw_response_description: string | null;
  connection_transaction_id: string | null;
  scheme_transaction_id: string | null;
  authorized_at: Date | null;
  captured_at: Date | null;
  voided_at: Date | null;
  approval_expires_at: Date | null;
  pending: PendingCall | null;
  pending_since: Date | null;
  created_by: string | null;
  created_at: Date;
  updated_at: Date;
};

export type RefundRow = {
  tenant_id: string;
  id: string;
  transaction_id: string;
  status: RefundStatus;
  currency: string;
  amount: number;
  reason: string | null;
  connection_refund_id: string | null;
  error_code: string | null;
  raw_response_code: string | null;
  raw_response_description: string | null;
  pending: boolean;
  pending_since: Date | null;
  created_by: string | null;
  created_at: Date;
  updated_at: Date;
};

// bigint columns come back as strings from pg: the amounts are cast to int8 → numbers below.
const AMOUNTS = 'amount::float8 AS amount, authorized_amount::float8 AS authorized_amount, captured_amount::float8 AS captured_amount, refunded_amount::float8 AS refunded_amount';
const COLUMNS = `tenant_id, id, connection_id, processor, status, intent, ${AMOUNTS}, currency, country, external_identifier, metadata,
  payment_source, merchant_initiated, is_subsequent_payment, previous_scheme_transaction_id, payment_method, three_d_session_id, three_d_secure,
  error_code, auth_response_code, cvv_response_code, avs_response_code, raw_response_code, raw_response_description, connection_transaction_id,
  scheme_transaction_id, authorized_at, captured_at, voided_at, approval_expires_at, pending, pending_since, created_by, created_at, updated_at`;
const REFUND_COLUMNS = `tenant_id, id, transaction_id, status, currency, amount::float8 AS amount, reason, connection_refund_id, error_code,
  raw_response_code, raw_response_description, pending, pending_since, created_by, created_at, updated_at`;

/** Every column a transaction's outcome may change: written whole, from the state worked out in Coffer. */
const OUTCOME_FIELDS: [string, string][] = [
  ['status', 'text'], ['authorized_amount', 'bigint'], ['captured_amount', 'bigint'], ['refunded_amount', 'bigint'], ['payment_method', 'jsonb'],
  ['three_d_secure', 'jsonb'], ['error_code', 'text'], ['auth_response_code', 'text'], ['cvv_response_code', 'text'], ['avs_response_code', 'text'],
  ['raw_response_code', 'text'], ['raw_response_description', 'text'], ['connection_transaction_id', 'text'], ['scheme_transaction_id', 'text'],
  ['authorized_at', 'timestamptz'], ['captured_at', 'timestamptz'], ['voided_at', 'timestamptz'], ['approval_expires_at', 'timestamptz'],
  ['pending', 'jsonb'], ['pending_since', 'timestamptz'], ['updated_at', 'timestamptz'],
];

const INSERT_FIELDS: [string, string][] = [
  ['tenant_id', 'uuid'], ['id', 'uuid'], ['connection_id', 'uuid'], ['processor', 'text'], ['intent', 'text'], ['amount', 'bigint'], ['currency', 'text'],
  ['country', 'text'], ['external_identifier', 'text'], ['metadata', 'jsonb'], ['payment_source', 'text'], ['merchant_initiated', 'boolean'],
  ['is_subsequent_payment', 'boolean'], ['previous_scheme_transaction_id', 'text'], ['three_d_session_id', 'uuid'], ['created_by', 'uuid'],
  ['created_at', 'timestamptz'], ...OUTCOME_FIELDS,
];

const recordset = (fields: [string, string][]) => fields.map(([name, type]) => `${name} ${type}`).join(', ');
const names = (fields: [string, string][]) => fields.map(([name]) => name).join(', ');

/** The INSERT of new transactions (status processing, their authorization pending), group-committed with their audit entries and events. */
export function insertTransactionsStatement(rows: TransactionRow[]): Statement {
  return {
    sql: `INSERT INTO transactions (${names(INSERT_FIELDS)})
     SELECT ${names(INSERT_FIELDS)} FROM json_to_recordset($1::json) AS t (${recordset(INSERT_FIELDS)})`,
    params: [JSON.stringify(rows)],
  };
}

/**
 * Outcomes of processor calls: each row's new state, written only while the row still waits on
 * the call it answers (its pending key), so an answer recorded twice (the call resumed by the
 * sweep meanwhile) changes nothing the second time; a null key matches a row waiting on no call. An UPDATE, group-committed like an INSERT
 * (src/db/group-commit.ts runs it as one data-modifying CTE among the batch's statements).
 */
export function saveOutcomesStatement(rows: (TransactionRow & { answered_key: string | null })[]): Statement {
  const fields: [string, string][] = [['tenant_id', 'uuid'], ['id', 'uuid'], ['answered_key', 'text'], ...OUTCOME_FIELDS];
  return {
    sql: `UPDATE transactions t SET ${OUTCOME_FIELDS.map(([name]) => `${name} = v.${name}`).join(', ')}
     FROM json_to_recordset($1::json) AS v (${recordset(fields)})
     WHERE t.tenant_id = v.tenant_id AND t.id = v.id AND (t.pending->>'key') IS NOT DISTINCT FROM v.answered_key`,
    params: [JSON.stringify(rows)],
  };
}

/** `answeredKey` null: a change of a row that waits on no call (a poll's answer, an approval run out). */
export async function saveOutcome(db: Database, row: TransactionRow, answeredKey: string | null, tx: Tx): Promise<boolean> {
  const st = saveOutcomesStatement([{ ...row, answered_key: answeredKey }]);
  return (await db.query(`WITH u AS (${st.sql} RETURNING 1) SELECT count(*)::int AS n FROM u`, st.params, tx))[0].n === 1;
}

/** Sets a transaction's refunded_amount, on a row locked by the caller. */
export async function setRefundedAmount(db: Database, tenantId: string, id: string, refunded: number, tx: Tx): Promise<void> {
  await db.query(
    `UPDATE transactions SET refunded_amount = $3, updated_at = date_trunc('milliseconds', clock_timestamp()) WHERE tenant_id = $1 AND id = $2`,
    [tenantId, id, refunded],
    tx,
  );
}

/** Links the 3DS session of an approval to its transaction, while it still awaits the approval. */
export async function setApprovalSession(db: Database, tenantId: string, id: string, sessionId: string): Promise<void> {
  await db.query(
    `UPDATE transactions SET three_d_session_id = $3 WHERE tenant_id = $1 AND id = $2 AND status = 'buyer_approval_pending'`,
    [tenantId, id, sessionId],
  );
}

/** Moves unanswered calls' pending_since on: claimed by one sweep, the others leave them alone for a while. */
export async function claimUnanswered(db: Database, table: 'transactions' | 'refunds', keys: { tenant_id: string; id: string }[], tx?: Tx): Promise<void> {
  if (keys.length === 0) return;
  await db.query(
    `UPDATE ${table} SET pending_since = clock_timestamp() WHERE (tenant_id, id) IN (SELECT * FROM unnest($1::uuid[], $2::uuid[]))`,
    [keys.map((k) => k.tenant_id), keys.map((k) => k.id)],
    tx,
  );
}

/** Marks a call about to be made (the outbox entry), on a row locked by the caller. */
export async function markPending(db: Database, tenantId: string, id: string, pending: PendingCall, tx: Tx, threeDSecure?: Record<string, unknown>): Promise<void> {
  await db.query(
    `UPDATE transactions SET pending = $3, pending_since = clock_timestamp(), updated_at = date_trunc('milliseconds', clock_timestamp()),
       three_d_secure = coalesce($4, three_d_secure)
     WHERE tenant_id = $1 AND id = $2`,
    [tenantId, id, pending, threeDSecure ?? null],
    tx,
  );
}

export function findTransaction(db: Database, tenantId: string, id: string, opts: { tx?: Tx; lock?: boolean } = {}): Promise<TransactionRow | undefined> {
  return db.one<TransactionRow>(`SELECT ${COLUMNS} FROM transactions WHERE tenant_id = $1 AND id = $2${opts.lock ? ' FOR UPDATE' : ''}`, [tenantId, id], opts.tx);
}

export type TransactionFilters = {
  status?: string[];
  amount_gte?: number;
  amount_lte?: number;
  created_at_gte?: string;
  created_at_lte?: string;
  external_identifier?: string;
  payment_source?: string[];
  merchant_initiated?: boolean;
  is_subsequent_payment?: boolean;
  connection_id?: string;
  /** Set from a reconciliation_id filter: the id it encodes. */
  id?: string;
};

/** A page of the tenant's transactions, newest first, after the cursor position if any; `limit + 1` rows to tell whether more follow. */
export function listTransactions(
  db: Database,
  tenantId: string,
  f: TransactionFilters,
  page: { limit: number; after?: { created_at: string; id: string } },
): Promise<TransactionRow[]> {
  const params: unknown[] = [tenantId];
  const where = ['tenant_id = $1'];
  const add = (sql: (n: string) => string, value: unknown) => {
    params.push(value);
    where.push(sql(`$${params.length}`));
  };
  if (f.status?.length) add((n) => `status = ANY(${n}::text[])`, f.status);
  if (f.amount_gte !== undefined) add((n) => `amount >= ${n}`, f.amount_gte);
  if (f.amount_lte !== undefined) add((n) => `amount <= ${n}`, f.amount_lte);
  if (f.created_at_gte !== undefined) add((n) => `created_at >= ${n}`, f.created_at_gte);
  if (f.created_at_lte !== undefined) add((n) => `created_at <= ${n}`, f.created_at_lte);
  if (f.external_identifier !== undefined) add((n) => `external_identifier = ${n}`, f.external_identifier);
  if (f.payment_source?.length) add((n) => `payment_source = ANY(${n}::text[])`, f.payment_source);
  if (f.merchant_initiated !== undefined) add((n) => `merchant_initiated = ${n}`, f.merchant_initiated);
  if (f.is_subsequent_payment !== undefined) add((n) => `is_subsequent_payment = ${n}`, f.is_subsequent_payment);
  if (f.connection_id !== undefined) add((n) => `connection_id = ${n}`, f.connection_id);
  if (f.id !== undefined) add((n) => `id = ${n}`, f.id);
  if (page.after) {
    params.push(page.after.created_at, page.after.id);
    where.push(`(created_at, id) < ($${params.length - 1}::timestamptz, $${params.length}::uuid)`);
  }
  params.push(page.limit + 1);
  return db.query<TransactionRow>(
    `SELECT ${COLUMNS} FROM transactions WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $${params.length}`,
    params,
  );
}

/** Transactions whose call was never answered (a crash, a lost reply) for longer than `olderThanMs`, locked for resuming. */
export function takeUnansweredTransactions(db: Database, olderThanMs: number, limit: number, tx: Tx): Promise<TransactionRow[]> {
  return db.query<TransactionRow>(
    `SELECT ${COLUMNS} FROM transactions
     WHERE pending IS NOT NULL AND pending_since < clock_timestamp() - make_interval(secs => $1::float8 / 1000)
     ORDER BY pending_since LIMIT $2 FOR UPDATE SKIP LOCKED`,
    [olderThanMs, limit],
    tx,
  );
}

/** A transaction awaiting its buyer's approval, by its id alone (the approval page has no tenant); `lock` for the rest of `tx`. */
export function findAwaitingApproval(db: Database, id: string, opts: { tx?: Tx; lock?: boolean } = {}): Promise<TransactionRow | undefined> {
  return db.one<TransactionRow>(
    `SELECT ${COLUMNS} FROM transactions WHERE id = $1 AND status = 'buyer_approval_pending'${opts.lock ? ' FOR UPDATE' : ''}`,
    [id],
    opts.tx,
  );
}

/** Approvals past their deadline, locked. */
export function takeExpiredApprovals(db: Database, limit: number, tx: Tx): Promise<TransactionRow[]> {
  return db.query<TransactionRow>(
    `SELECT ${COLUMNS} FROM transactions
     WHERE status = 'buyer_approval_pending' AND approval_expires_at <= clock_timestamp() AND pending IS NULL
     ORDER BY approval_expires_at LIMIT $1 FOR UPDATE SKIP LOCKED`,
    [limit],
    tx,
  );
}

export async function insertRefund(db: Database, row: Omit<RefundRow, 'created_at' | 'updated_at' | 'pending_since'>, tx: Tx): Promise<RefundRow> {
  return (await db.one<RefundRow>(
    `INSERT INTO refunds (tenant_id, id, transaction_id, status, currency, amount, reason, pending, pending_since, created_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, clock_timestamp(), $9) RETURNING ${REFUND_COLUMNS}`,
    [row.tenant_id, row.id, row.transaction_id, row.status, row.currency, row.amount, row.reason, row.pending, row.created_by],
    tx,
  ))!;
}

export async function saveRefund(db: Database, row: RefundRow, tx: Tx): Promise<RefundRow> {
  return (await db.one<RefundRow>(
    `UPDATE refunds SET status = $3, connection_refund_id = $4, error_code = $5, raw_response_code = $6, raw_response_description = $7,
       pending = $8, pending_since = CASE WHEN $8 THEN clock_timestamp() END, updated_at = date_trunc('milliseconds', clock_timestamp())
     WHERE tenant_id = $1 AND id = $2 RETURNING ${REFUND_COLUMNS}`,
    [row.tenant_id, row.id, row.status, row.connection_refund_id, row.error_code, row.raw_response_code, row.raw_response_description, row.pending],
    tx,
  ))!;
}

export function findRefund(db: Database, tenantId: string, transactionId: string, id: string, opts: { tx?: Tx; lock?: boolean } = {}): Promise<RefundRow | undefined> {
  return db.one<RefundRow>(
    `SELECT ${REFUND_COLUMNS} FROM refunds WHERE tenant_id = $1 AND transaction_id = $2 AND id = $3${opts.lock ? ' FOR UPDATE' : ''}`,
    [tenantId, transactionId, id],
    opts.tx,
  );
}

/** A page of a transaction's refunds, oldest first, after or before a cursor position; `limit + 1` rows. */
export function listRefunds(
  db: Database,
  tenantId: string,
  transactionId: string,
  page: { limit: number; after?: { created_at: string; id: string }; before?: { created_at: string; id: string } },
): Promise<RefundRow[]> {
  const params: unknown[] = [tenantId, transactionId];
  let where = 'tenant_id = $1 AND transaction_id = $2';
  let order = 'created_at, id';
  if (page.after) {
    params.push(page.after.created_at, page.after.id);
    where += ` AND (created_at, id) > ($3::timestamptz, $4::uuid)`;
  } else if (page.before) {
    params.push(page.before.created_at, page.before.id);
    where += ` AND (created_at, id) < ($3::timestamptz, $4::uuid)`;
    order = 'created_at DESC, id DESC';
  }
  params.push(page.limit + 1);
  return db.query<RefundRow>(`SELECT ${REFUND_COLUMNS} FROM refunds WHERE ${where} ORDER BY ${order} LIMIT $${params.length}`, params);
}

/** Refunds whose call was never answered for longer than `olderThanMs`, locked with their transaction by the caller. */
export function findUnansweredRefunds(db: Database, olderThanMs: number, limit: number): Promise<Pick<RefundRow, 'tenant_id' | 'id' | 'transaction_id'>[]> {
  return db.query(
    `SELECT tenant_id, id, transaction_id FROM refunds
     WHERE pending AND pending_since < clock_timestamp() - make_interval(secs => $1::float8 / 1000)
     ORDER BY pending_since LIMIT $2`,
    [olderThanMs, limit],
  );
}
