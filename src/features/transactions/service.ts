import { randomBytes, randomUUID } from 'node:crypto';
import type { Principal } from '../../access/principal.ts';
import type { Item } from '../../db/group-commit.ts';
import { ApiError } from '../../http/errors.ts';
import { decodeCursor, encodeCursor } from '../../http/pagination.ts';
import { initialState, planCapture, planVoid, type TransactionAction, type TransactionState, uuidFromReconciliationId } from '../../processors/index.ts';
import { authorizeRequestOf, type Core, createCore, readCard, readThreeDS, type TransactionDeps } from './core.ts';
import { type Answer, applyAnswer, pollAt } from './outcome.ts';
import { createApprovals } from './approval.ts';
import { createRefunds } from './refunds.ts';
import { createRecovery } from './recovery.ts';
import { checkUseCase } from './rules.ts';
import type { CreateTransactionInput } from './schema.ts';
import { findTransaction, listTransactions, markPending, type PendingCall, saveOutcome, type TransactionFilters, type TransactionRow } from './store.ts';

export { SETTLE_JOB } from './core.ts';
export type { TransactionDeps } from './core.ts';
export type TransactionService = ReturnType<typeof createTransactionService>;

/**
 * Transactions: a card token (or token intent) charged through a connection's processor. The
 * card is detokenized inside Coffer for the one call. Every processor call follows one
 * discipline (docs/orchestration.md, "Money safety"): under the row lock the call is planned
 * against the state machine and written down (the transaction's `pending`, a refund's row);
 * the call is made with an idempotency key derived from the ids; its answer is recorded only
 * while the row still waits for that call. A call left unanswered is made again by the sweep
 * with the same key (recovery.ts), so a crash between the call and the commit charges once.
 */
export function createTransactionService(deps: TransactionDeps) {
  const core = createCore(deps);
  const { db, groupCommit, logs, connections } = core;
  const refunds = createRefunds(core);
  const recovery = createRecovery(core, { finishAuthorization, finishCall, recordPoll: refunds.recordPoll, callRefund: refunds.call });

  /** Records an authorization's answer; `key` is the call's, so a second recording of it changes nothing. */
  async function finishAuthorization(row: TransactionRow, key: string, answer: Answer, audit: Item[] = [], opts: { insert?: boolean } = {}): Promise<TransactionRow> {
    const now = new Date();
    let applied;
    try {
      applied = applyAnswer(row, { type: 'authorize_result', result: answer as never }, answer, now);
    } catch (err) {
      return core.translate(err);
    }
    const next = applied.row;
    // No definite answer: the row stays pending, and the sweep makes the call again with the same key.
    next.pending = next.status === 'processing' ? row.pending : null;
    next.pending_since = next.status === 'processing' ? now : null;
    if (next.status === 'buyer_approval_pending') {
      // The URL is the buyer's capability: the transaction id and a secret of its own.
      next.payment_method = { ...next.payment_method, approval_url: `${deps.publicUrl()}/orchestration/approvals/${row.id}?token=${randomBytes(32).toString('base64url')}` };
      next.approval_expires_at = new Date(now.getTime() + deps.approvalMinutes * 60_000);
    }
    // Written once (a local processor) or as the outcome of the call the row was written down for.
    const write = opts.insert ? core.transactionTable.of(next) : core.outcomeTable.of({ ...next, answered_key: key });
    const items = [...audit, write, ...core.eventItems(next, applied.transition.events)];
    if (next.status === 'capture_pending') {
      await db.transaction(async (tx) => {
        await groupCommit.write(items, tx);
        await core.scheduleSettle(row.tenant_id, { transaction_id: row.id }, pollAt(answer, now), tx);
      });
    } else await groupCommit.write(items);
    return next;
  }

  /**
   * Plans a capture or void under the row lock and writes it down (the outbox entry): of two
   * calls on one transaction at once, the second finds the first pending and is refused.
   */
  async function begin(principal: Principal, id: string, operation: 'capture' | 'void', plan: (state: TransactionState) => number | undefined) {
    return db.transaction(async (tx) => {
      const row = await findTransaction(db, principal.tenantId, id, { tx, lock: true });
      if (!row) throw core.notFound(id);
      if (row.pending) {
        throw ApiError.conflict(`Transaction ${id} is waiting on the processor for its ${row.pending.operation}: try again once it has finished.`);
      }
      let amount: number | undefined;
      try {
        amount = plan(row);
      } catch (err) {
        return core.translate(err);
      }
      // A key per attempt: a capture declined and tried again is another request to the processor.
      const pending: PendingCall = { operation, key: `${id}:${operation}:${randomBytes(6).toString('base64url')}`, ...(amount !== undefined ? { amount } : {}) };
      await markPending(db, principal.tenantId, id, pending, tx);
      return { ...row, pending };
    });
  }

  /** Records a capture's or void's answer, under the row lock, if the row still waits for this call. */
  async function finishCall(tenantId: string, id: string, key: string, action: TransactionAction, answer: Answer, actor?: Principal): Promise<TransactionRow> {
    return db.transaction(async (tx) => {
      const row = await findTransaction(db, tenantId, id, { tx, lock: true });
      if (!row) throw core.notFound(id);
      if (row.pending?.key !== key) return row;
      const now = new Date();
      let applied;
      try {
        applied = applyAnswer(row, action, answer, now);
      } catch (err) {
        // The processor answered something the state machine cannot take: recorded as a failure of the call, the status kept.
        deps.log.error({ err: (err as Error).message, transaction_id: id }, 'processor answer does not fit the transaction; the call is recorded as failed');
        applied = { row: { ...row, error_code: 'invalid_service_response', updated_at: now }, transition: { events: [] } };
      }
      const next = applied.row;
      const waiting = answer.status === 'unknown';
      next.pending = waiting ? row.pending : null;
      next.pending_since = waiting ? now : null;
      await saveOutcome(db, next, key, tx);
      const items: Item[] = [...core.eventItems(next, applied.transition.events)];
      if (actor) items.push(logs.item(actor, { entityType: 'transaction', entityId: id, operation: action.type, message: `Transaction ${action.type}: ${next.status}` }));
      await groupCommit.write(items, tx);
      if (!waiting && (next.status === 'capture_pending' || next.status === 'authorization_void_pending')) {
        await core.scheduleSettle(tenantId, { transaction_id: id }, pollAt(answer, now), tx);
      }
      return next;
    });
  }

  async function load(principal: Principal, id: string): Promise<TransactionRow> {
    const row = await findTransaction(db, principal.tenantId, id);
    if (!row) throw core.notFound(id);
    return row;
  }

  return {
    refunds: refunds.api,
    recovery,
    approvals: createApprovals(core, finishAuthorization),

    /**
     * `requestId`: the id a request under an SVC-IDEMPOTENCY-KEY gives its transaction
     * (idempotentId). The transaction is written down, committed, before the processor call,
     * while the request's own writes commit only with its reply; a retry with the key after a
     * crash in between finds the transaction and carries its call on (the same processor key),
     * rather than charging again under a new one.
     */
    async create(principal: Principal, body: CreateTransactionInput, requestId?: string): Promise<TransactionRow> {
      checkUseCase(body);
      const tenantId = principal.tenantId;
      const { row: connection, processor } = await connections.processorFor(tenantId, body.connection_id, { field: 'body.connection_id' });
      const audit: Item[] = [];
      const { card, method } = await readCard(core, principal, body, audit);
      const threeDS = body.three_d_session_id ? await readThreeDS(core, principal, body.three_d_session_id, body) : undefined;
      const id = requestId ?? randomUUID();
      const key = `${id}:authorize`;
      if (requestId !== undefined) {
        const earlier = await findTransaction(db, tenantId, requestId);
        if (earlier && earlier.pending?.key === key) {
          const answer = await core.call('authorize', earlier, () => processor.authorize(authorizeRequestOf(earlier, card, threeDS?.data)));
          return finishAuthorization(earlier, key, answer as Answer, audit);
        }
        if (earlier) return earlier;
      }
      const intent = body.intent ?? 'authorize';
      const mit = body.merchant_initiated ?? false;
      const source = body.payment_source ?? 'ecommerce';
      const now = new Date();
      const row: TransactionRow = {
        tenant_id: tenantId, id, connection_id: connection.id, processor: connection.processor, ...initialState(body.amount, intent), currency: body.currency,
        country: body.country ?? null, external_identifier: body.external_identifier ?? null, metadata: body.metadata ?? null, payment_source: source,
        merchant_initiated: mit, is_subsequent_payment: body.is_subsequent_payment ?? false,
        previous_scheme_transaction_id: body.previous_scheme_transaction_id ?? null, payment_method: { ...method, scheme: card.brand ?? null },
        three_d_session_id: body.three_d_session_id ?? null, three_d_secure: threeDS?.shown ?? null, error_code: null, auth_response_code: null,
        cvv_response_code: null, avs_response_code: null, raw_response_code: null, raw_response_description: null, connection_transaction_id: null,
        scheme_transaction_id: null, authorized_at: null, captured_at: null, voided_at: null, approval_expires_at: null,
        pending: { operation: 'authorize', key }, pending_since: now, created_by: principal.actorId, created_at: now, updated_at: now,
      };
      const created = [
        ...audit,
        logs.item(principal, { entityType: 'transaction', entityId: id, operation: 'create', message: `Transaction created (${intent} ${body.amount} ${body.currency})` }),
        ...core.eventItems(row, ['transaction.created']),
      ];
      // The outbox entry: the transaction, pending its authorization, with the card's use and the event, before the call.
      // A local processor charges nothing outside this process: the transaction is written once, with its outcome.
      // Committed before the call even inside a request's transaction (SVC-IDEMPOTENCY-KEY): a call must never be made unrecorded.
      if (!processor.local) await db.withoutAmbient(() => groupCommit.write([core.transactionTable.of(row), ...created]));
      const answer = await core.call('authorize', row, () => processor.authorize(authorizeRequestOf(row, card, threeDS?.data)));
      return processor.local ? finishAuthorization(row, key, answer as Answer, created, { insert: true }) : finishAuthorization(row, key, answer as Answer);
    },

    get: load,

    async list(principal: Principal, q: TransactionFilters & { limit: number; cursor?: string; reconciliation_id?: string }) {
      const filters: TransactionFilters = { ...q };
      if (q.reconciliation_id !== undefined) {
        try {
          filters.id = uuidFromReconciliationId(q.reconciliation_id);
        } catch {
          throw ApiError.field('query.reconciliation_id', 'is not a reconciliation_id (22 or fewer base62 characters of a transaction id)');
        }
      }
      const after = q.cursor !== undefined ? decodeCursor(q.cursor, ['created_at', 'id']) : undefined;
      if (after && (Number.isNaN(Date.parse(after.created_at)) || !/^[0-9a-f-]{36}$/.test(after.id))) throw ApiError.field('query.cursor', 'is not a cursor returned by this endpoint');
      const rows = await listTransactions(db, principal.tenantId, filters, { limit: q.limit, after: after as { created_at: string; id: string } | undefined });
      const data = rows.slice(0, q.limit);
      const last = data[data.length - 1];
      const next = rows.length > q.limit && last ? encodeCursor({ created_at: last.created_at.toISOString(), id: last.id }) : null;
      return { pagination: { limit: q.limit, next_cursor: next, previous_cursor: null }, data };
    },

    async capture(principal: Principal, id: string, body: { amount?: number }): Promise<TransactionRow> {
      const row = await begin(principal, id, 'capture', (state) => planCapture(state, body.amount));
      const amount = row.pending!.amount!;
      const { processor } = await connections.processorFor(row.tenant_id, row.connection_id, { withDeleted: true });
      const answer = await core.call('capture', row, () => processor.capture({ transaction: core.refOf(row), amount, idempotency_key: row.pending!.key }));
      return finishCall(row.tenant_id, id, row.pending!.key, { type: 'capture', amount, result: answer as never }, answer as Answer, principal);
    },

    async void(principal: Principal, id: string): Promise<TransactionRow> {
      const row = await begin(principal, id, 'void', (state) => {
        planVoid(state);
        return undefined;
      });
      const { processor } = await connections.processorFor(row.tenant_id, row.connection_id, { withDeleted: true });
      const answer = await core.call('void', row, () => processor.void({ transaction: core.refOf(row), idempotency_key: row.pending!.key }));
      return finishCall(row.tenant_id, id, row.pending!.key, { type: 'void', result: answer as never }, answer as Answer, principal);
    },

    /** The processor of a transaction's connection (deleted or not). */
    processorOf(row: TransactionRow) {
      return connections.processorFor(row.tenant_id, row.connection_id, { withDeleted: true }).then((c) => c.processor);
    },
  };
}

export type { Core };
