/**
 * What runs in the background: calls left unanswered (a crash between the call and the commit,
 * a lost reply) are made again with their recorded key; transactions and refunds the processor
 * settles later are polled (the `orchestration.settle` job); approvals that ran out fail.
 */
import type { Principal } from '../../access/principal.ts';
import type { ClaimedJob } from '../../db/jobs.ts';
import type { Item } from '../../db/group-commit.ts';
import type { RefundResult, ThreeDSData, TransactionAction } from '../../processors/index.ts';
import { authorizeRequestOf, cardSourceOf, type Core, readCard, readThreeDS, resumingPrincipal } from './core.ts';
import { type Answer, pollAt } from './outcome.ts';
import {
  claimUnanswered, findRefund, findTransaction, findUnansweredRefunds, type RefundRow, takeExpiredApprovals, takeUnansweredTransactions, type TransactionRow,
} from './store.ts';

/** How many times a transaction or refund the processor keeps pending is polled before Coffer stops asking (and logs it). */
const MAX_POLLS = 200;

type Finishers = {
  finishAuthorization(row: TransactionRow, key: string, answer: Answer, audit?: Item[]): Promise<TransactionRow>;
  finishCall(tenantId: string, id: string, key: string, action: TransactionAction, answer: Answer, actor?: Principal): Promise<TransactionRow>;
  recordPoll(tenantId: string, transactionId: string, refundId: string, answer: RefundResult, polls: number): Promise<unknown>;
  callRefund(transaction: TransactionRow, refund: RefundRow): Promise<unknown>;
};

export function createRecovery(core: Core, finish: Finishers) {
  const { db, log, connections } = core;

  async function resumeTransaction(row: TransactionRow): Promise<void> {
    const pending = row.pending!;
    const { processor } = await connections.processorFor(row.tenant_id, row.connection_id, { withDeleted: true });
    if (pending.operation === 'authorize') {
      const audit: Item[] = [];
      const principal = resumingPrincipal(row);
      const source = cardSourceOf(row);
      let card;
      let threeDS: ThreeDSData | undefined;
      try {
        ({ card } = await readCard(core, principal, source, audit));
        // The same request needs the same 3DS data: read from the session again (it outlives the resume delay).
        if (row.three_d_session_id) threeDS = (await readThreeDS(core, principal, row.three_d_session_id, source)).data;
      } catch (err) {
        // The card (or its 3DS session) is gone: the call cannot be made again; ask where it stands instead.
        if (!processor.status) throw err;
        const answer = await core.call('status', row, () => processor.status!({ transaction: core.refOf(row) }));
        await finish.finishAuthorization(row, pending.key, answer as Answer);
        return;
      }
      const answer = await core.call('authorize', row, () => processor.authorize(authorizeRequestOf(row, card, threeDS)));
      await finish.finishAuthorization(row, pending.key, answer as Answer, audit);
      return;
    }
    if (pending.operation === 'capture') {
      const amount = pending.amount ?? row.authorized_amount;
      const answer = await core.call('capture', row, () => processor.capture({ transaction: core.refOf(row), amount, idempotency_key: pending.key }));
      await finish.finishCall(row.tenant_id, row.id, pending.key, { type: 'capture', amount, result: answer as never }, answer as Answer);
      return;
    }
    const answer = await core.call('void', row, () => processor.void({ transaction: core.refOf(row), idempotency_key: pending.key }));
    await finish.finishCall(row.tenant_id, row.id, pending.key, { type: 'void', result: answer as never }, answer as Answer);
  }

  return {
    /** Makes again, with the same keys, the calls whose answers were never recorded. Returns how many. */
    async resumeUnanswered(limit = 100): Promise<number> {
      // Claimed by moving pending_since on, in a short transaction: another process's sweep then leaves them alone for a while.
      const rows = await db.transaction(async (tx) => {
        const taken = await takeUnansweredTransactions(db, core.resumeAfterMs, limit, tx);
        await claimUnanswered(db, 'transactions', taken, tx);
        return taken;
      });
      for (const row of rows) {
        try {
          await resumeTransaction(row);
          log.warn({ transaction_id: row.id, operation: row.pending!.operation }, 'an unanswered processor call was made again with its key');
        } catch (err) {
          log.error({ err: (err as Error).message, transaction_id: row.id }, 'resuming a processor call failed; it will be tried again');
        }
      }
      const stale = await findUnansweredRefunds(db, core.resumeAfterMs, limit);
      for (const r of stale) {
        try {
          const transaction = await findTransaction(db, r.tenant_id, r.transaction_id);
          const refund = await findRefund(db, r.tenant_id, r.transaction_id, r.id);
          if (!transaction || !refund?.pending) continue;
          await claimUnanswered(db, 'refunds', [r]);
          await finish.callRefund(transaction, refund);
        } catch (err) {
          log.error({ err: (err as Error).message, refund_id: r.id }, 'resuming a refund call failed; it will be tried again');
        }
      }
      return rows.length + stale.length;
    },

    /** Approvals past approval_expires_at: authorization_failed with incomplete_buyer_approval. */
    async expireApprovals(limit = 500): Promise<number> {
      return db.transaction(async (tx) => {
        const rows = await takeExpiredApprovals(db, limit, tx);
        for (const row of rows) await core.applyChange(row, { type: 'approval_expire' }, undefined, tx);
        return rows.length;
      });
    },

    /** The `orchestration.settle` job: asks the processor where a pending capture, void or refund stands. */
    async settle(job: ClaimedJob<{ transaction_id: string; refund_id?: string; polls?: number }>): Promise<void> {
      const tenantId = job.tenantId!;
      const { transaction_id: id, refund_id: refundId } = job.payload;
      const polls = job.payload.polls ?? 0;
      const row = await findTransaction(db, tenantId, id);
      if (!row) return;
      const processor = (await connections.processorFor(tenantId, row.connection_id, { withDeleted: true })).processor;
      if (polls >= MAX_POLLS) {
        log.error({ transaction_id: id, refund_id: refundId }, 'the processor still reports the operation pending; Coffer stops polling it');
        return;
      }
      if (refundId) {
        const refund = await findRefund(db, tenantId, id, refundId);
        if (!refund || refund.pending || refund.status !== 'processing' || !processor.refundStatus) return;
        const answer = await processor.refundStatus({ transaction: core.refOf(row), connection_refund_id: refund.connection_refund_id ?? '', amount: refund.amount });
        await finish.recordPoll(tenantId, id, refundId, answer, polls);
        return;
      }
      const waiting = ['capture_pending', 'authorization_void_pending'].includes(row.status) && !row.pending;
      if (!waiting || !processor.status) return;
      const answer = await processor.status({ transaction: core.refOf(row) });
      await db.transaction(async (tx) => {
        const current = await findTransaction(db, tenantId, id, { tx, lock: true });
        if (!current || current.status !== row.status || current.pending) return;
        const next = await core.applyChange(current, { type: 'settle', result: answer }, answer, tx);
        if (next.status === current.status) await core.scheduleSettle(tenantId, { transaction_id: id, polls: polls + 1 }, pollAt(answer, new Date()), tx);
      });
    },
  };
}
