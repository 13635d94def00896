/**
 * Refunds of a captured transaction. Under the transaction's row lock a refund reserves its
 * amount (refunded_amount grows at once, so the refunds of any interleaving never add up to more
 * than was captured) and its row is written, pending its call; the call is made with the key
 * `<refund id>:refund`; its answer is recorded under the lock again, releasing the amount if the
 * refund was declined, failed or voided.
 */
import { randomUUID } from 'node:crypto';
import type { Principal } from '../../access/principal.ts';
import type { Item } from '../../db/group-commit.ts';
import { ApiError } from '../../http/errors.ts';
import { decodeCursor, encodeCursor } from '../../http/pagination.ts';
import { apply, type RefundResult, refundStatusOf } from '../../processors/index.ts';
import type { Core } from './core.ts';
import { stateOf } from './outcome.ts';
import { findRefund, findTransaction, insertRefund, listRefunds, type RefundRow, saveRefund, setRefundedAmount, type TransactionRow } from './store.ts';

export function createRefunds(core: Core) {
  const { db, groupCommit, logs, events, connections } = core;

  function refundEvents(refund: RefundRow, types: readonly string[]): Item[] {
    const payload = { id: refund.id, transaction_id: refund.transaction_id, status: refund.status, amount: refund.amount, currency: refund.currency, error_code: refund.error_code };
    return types.map((type) => events.item(refund.tenant_id, type, refund.id, payload));
  }

  /**
   * Records a refund call's (or poll's) answer under the transaction's lock, if the refund is
   * still in the state the answer is for: pending its call, or (a poll) processing.
   */
  async function record(tenantId: string, transactionId: string, refundId: string, answer: RefundResult, opts: { poll: boolean; polls?: number }): Promise<RefundRow> {
    return db.transaction(async (tx) => {
      const transaction = await findTransaction(db, tenantId, transactionId, { tx, lock: true });
      const refund = await findRefund(db, tenantId, transactionId, refundId, { tx, lock: true });
      if (!transaction || !refund) throw ApiError.notFound('refund');
      if (opts.poll ? refund.pending || refund.status !== 'processing' : !refund.pending) return refund;
      const status = refundStatusOf(answer.status);
      let transition;
      try {
        transition = apply(stateOf(transaction), { type: 'refund_update', amount: refund.amount, from: refund.status, to: status });
      } catch (err) {
        core.log.error({ err: (err as Error).message, refund_id: refundId }, 'processor answer does not fit the refund; it is left as it was');
        return refund;
      }
      if (transition.state.refunded_amount !== transaction.refunded_amount) await setRefundedAmount(db, tenantId, transactionId, transition.state.refunded_amount, tx);
      const next = await saveRefund(db, {
        ...refund,
        status,
        connection_refund_id: answer.connection_refund_id ?? refund.connection_refund_id,
        error_code: answer.error_code ?? (status === 'succeeded' || status === 'processing' ? null : refund.error_code),
        raw_response_code: answer.raw_response_code ?? refund.raw_response_code,
        raw_response_description: answer.raw_response_description ?? refund.raw_response_description,
        // No definite answer: the sweep makes the call again with the same key.
        pending: answer.status === 'unknown',
      }, tx);
      await groupCommit.write(refundEvents(next, transition.events), tx);
      if (answer.status === 'processing') {
        const at = answer.settles_at ? Math.max(Date.parse(answer.settles_at) || 0, Date.now()) : Date.now() + 5_000;
        await core.scheduleSettle(tenantId, { transaction_id: transactionId, refund_id: refundId, polls: (opts.polls ?? 0) + 1 }, new Date(at), tx);
      }
      return next;
    });
  }

  /** Makes a refund's call (the first time, or again after a crash) and records the answer. */
  async function call(transaction: TransactionRow, refund: RefundRow): Promise<RefundRow> {
    const { processor } = await connections.processorFor(transaction.tenant_id, transaction.connection_id, { withDeleted: true });
    const answer = await core.call('refund', transaction, () => processor.refund({
      transaction: core.refOf(transaction), amount: refund.amount, ...(refund.reason ? { reason: refund.reason } : {}), idempotency_key: `${refund.id}:refund`,
    }));
    return record(transaction.tenant_id, transaction.id, refund.id, answer as RefundResult, { poll: false });
  }

  const api = {
    /**
     * `requestId`: the id a request under an SVC-IDEMPOTENCY-KEY gives its refund. The refund is
     * written down, committed, before its call, while the request's own writes commit only with
     * its reply; a retry with the key after a crash in between finds the refund and carries its
     * call on (the same processor key), rather than refunding again under a new one.
     */
    async create(principal: Principal, transactionId: string, body: { amount?: number; reason?: string | null }, requestId?: string): Promise<RefundRow> {
      const tenantId = principal.tenantId;
      if (requestId !== undefined) {
        const earlier = await findRefund(db, tenantId, transactionId, requestId);
        if (earlier && !earlier.pending) return earlier;
        if (earlier) {
          const transaction = await findTransaction(db, tenantId, transactionId);
          if (!transaction) throw core.notFound(transactionId);
          return call(transaction, earlier);
        }
      }
      // Committed before the call even inside a request's transaction (SVC-IDEMPOTENCY-KEY): a call must never be made unrecorded.
      const { transaction, refund } = await db.withoutAmbient(() => db.transaction(async (tx) => {
        const transaction = await findTransaction(db, tenantId, transactionId, { tx, lock: true });
        if (!transaction) throw core.notFound(transactionId);
        let transition;
        try {
          transition = apply(stateOf(transaction), { type: 'refund', amount: body.amount as number });
        } catch (err) {
          return core.translate(err);
        }
        const amount = transition.state.refunded_amount - transaction.refunded_amount;
        await setRefundedAmount(db, tenantId, transactionId, transition.state.refunded_amount, tx);
        const refund = await insertRefund(db, {
          tenant_id: tenantId, id: requestId ?? randomUUID(), transaction_id: transactionId, status: 'processing', currency: transaction.currency, amount,
          reason: body.reason ?? null, connection_refund_id: null, error_code: null, raw_response_code: null, raw_response_description: null,
          pending: true, created_by: principal.actorId,
        }, tx);
        await groupCommit.write([
          logs.item(principal, { entityType: 'refund', entityId: refund.id, operation: 'create', message: `Refund of ${amount} ${transaction.currency} for transaction ${transactionId} requested` }),
          ...refundEvents(refund, ['refund.created']),
        ], tx);
        return { transaction: { ...transaction, refunded_amount: transition.state.refunded_amount }, refund };
      }));
      return call(transaction, refund);
    },

    async get(principal: Principal, transactionId: string, id: string): Promise<RefundRow> {
      const refund = await findRefund(db, principal.tenantId, transactionId, id);
      if (!refund) throw new ApiError(404, `Refund ${id} of transaction ${transactionId} was not found.`);
      return refund;
    },

    async list(principal: Principal, transactionId: string, q: { limit: number; cursor?: string }) {
      if (!(await findTransaction(db, principal.tenantId, transactionId))) throw core.notFound(transactionId);
      let position: { created_at: string; id: string; dir: string } | undefined;
      if (q.cursor !== undefined) {
        const c = decodeCursor(q.cursor, ['created_at', 'id', 'dir']);
        if (Number.isNaN(Date.parse(c.created_at)) || !/^[0-9a-f-]{36}$/.test(c.id) || !['next', 'previous'].includes(c.dir)) {
          throw ApiError.field('query.cursor', 'is not a cursor returned by this endpoint');
        }
        position = c as typeof position;
      }
      const at = position ? { created_at: position.created_at, id: position.id } : undefined;
      const backwards = position?.dir === 'previous';
      const rows = await listRefunds(db, principal.tenantId, transactionId, { limit: q.limit, ...(backwards ? { before: at } : { after: at }) });
      const more = rows.length > q.limit;
      const data = rows.slice(0, q.limit);
      if (backwards) data.reverse();
      const cursor = (row: RefundRow | undefined, dir: string) => (row ? encodeCursor({ created_at: row.created_at.toISOString(), id: row.id, dir }) : null);
      const hasNext = backwards ? data.length > 0 : more;
      const hasPrevious = backwards ? more : position !== undefined && data.length > 0;
      return {
        pagination: {
          limit: q.limit,
          next_cursor: hasNext ? cursor(data[data.length - 1], 'next') : null,
          previous_cursor: hasPrevious ? cursor(data[0], 'previous') : null,
        },
        data,
      };
    },
  };

  return {
    api,
    call,
    /** A settle job's poll of a refund left processing. */
    recordPoll: (tenantId: string, transactionId: string, refundId: string, answer: RefundResult, polls: number) =>
      record(tenantId, transactionId, refundId, answer, { poll: true, polls }),
  };
}
