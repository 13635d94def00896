import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { reconciliationId } from '../../src/processors/index.ts';
import type { StripeFake } from '../processors/stripe-fake.ts';
import { sleep } from './coffer.ts';
import { post, retryUntilAcked, type LoadStats } from './load.ts';

/**
 * The payment clients of the crash test: transactions through a stripe connection on the local
 * fake of Stripe's API (which lives in the test's process and so survives the kills), and
 * partial refunds of the captured ones. Every request carries its own SVC-IDEMPOTENCY-KEY and
 * is sent again with it until acknowledged (201), retried as the token clients retry.
 * Each transaction carries its sequence number in metadata.crash_seq (and external_identifier).
 */

export const SUCCESS_CARD = '4242424242424242';

export type PayRequest = {
  seq: number;
  key: string;
  kind: 'transaction' | 'refund';
  path: string;
  body: Record<string, unknown>;
  /** The acknowledgement's body (a transaction or a refund). */
  reply?: any;
  acked: boolean;
  attempts: number;
  rejected?: string;
};

/** A captured transaction a client may refund, and what it has left to refund. */
type Refundable = { id: string; left: number };

/** Sends until acknowledged (201 with an id), rejected (a 4xx other than 409), `deadline` passes, or `abort.aborted`. */
function sendUntilAcked(url: string, apiKey: string, req: PayRequest, stats: LoadStats, deadline: number, abort: AbortSignal): Promise<void> {
  return retryUntilAcked(req, stats, deadline, abort, () => post(url, apiKey, req), (res) => {
    if (typeof res.body?.id !== 'string') return `201 without an id: ${JSON.stringify(res.body).slice(0, 200)}`;
    req.reply = res.body;
    return undefined;
  });
}

/**
 * `clients` payment clients until `stopAt`, each finishing the request in hand until
 * `deadline`. Two in five of a client's requests refund (100 to 299, never more than is left)
 * one of the transactions it saw captured; the others create a transaction of 1000 to 4999 USD
 * with one of `tokens`, intent `capture` or (two in five) `authorize`.
 */
export async function drivePayments(opts: {
  url: string;
  apiKey: string;
  connectionId: string;
  tokens: string[];
  clients: number;
  stopAt: number;
  deadline: number;
  requests: PayRequest[];
  stats: LoadStats;
  abort: AbortSignal;
}): Promise<void> {
  let seq = 0;
  await Promise.all(
    Array.from({ length: opts.clients }, async () => {
      const mine: Refundable[] = [];
      while (performance.now() < opts.stopAt && !opts.abort.aborted) {
        const n = ++seq;
        const open = mine.filter((t) => t.left >= 100);
        let req: PayRequest;
        let target: Refundable | undefined;
        if (open.length > 0 && Math.random() < 0.4) {
          target = open[Math.floor(Math.random() * open.length)];
          const amount = Math.min(target.left, 100 + Math.floor(Math.random() * 200));
          target.left -= amount;
          req = { seq: n, key: randomUUID(), kind: 'refund', path: `/orchestration/transactions/${target.id}/refunds`, body: { amount, reason: `crash test refund ${n}` }, acked: false, attempts: 0 };
        } else {
          const body = {
            amount: 1000 + Math.floor(Math.random() * 4000),
            currency: 'USD',
            connection_id: opts.connectionId,
            token: opts.tokens[n % opts.tokens.length],
            intent: n % 5 < 2 ? 'authorize' : 'capture',
            external_identifier: `crash-${n}`,
            metadata: { crash_seq: String(n) },
          };
          req = { seq: n, key: randomUUID(), kind: 'transaction', path: '/orchestration/transactions', body, acked: false, attempts: 0 };
        }
        opts.requests.push(req);
        await sendUntilAcked(opts.url, opts.apiKey, req, opts.stats, opts.deadline, opts.abort);
        if (req.kind === 'transaction' && req.acked && req.reply.status === 'capture_succeeded') mine.push({ id: req.reply.id, left: req.reply.captured_amount });
      }
    }),
  );
}

export type PaymentCheck = {
  transactions: number;
  refunds: number;
  /** Acknowledged transactions or refunds missing, or in an earlier status than acknowledged. */
  lost: number;
  /** Transactions or refunds still waiting on the processor once the bound passed. */
  stuck: number;
  /** PaymentIntents beyond one per transaction, or naming no transaction; refunds at Stripe that Coffer does not hold. */
  doubleCharges: number;
  /** Idempotency keys (one crash_seq) that made more than one transaction. */
  duplicates: number;
  /** Transactions whose refunded_amount is not the sum of their live refunds, or exceeds the captured amount. */
  mismatched: number;
  /** Authorizations and refunds sent to Stripe again with their key (by a retry or the sweep, after a kill). */
  repeated: number;
};

/** What a transaction acknowledged in one status may have become since. */
const LATER: Record<string, string[]> = {
  processing: ['*'],
  authorization_succeeded: ['authorization_succeeded', 'capture_pending', 'capture_succeeded', 'authorization_void_pending', 'authorization_voided'],
  capture_pending: ['capture_pending', 'capture_succeeded'],
};

/**
 * Waits (bounded) until no transaction or refund waits on the processor (the sweep resumes
 * calls a kill left unanswered), then checks the payments against the requests and against
 * what the fake of Stripe saw.
 */
export async function checkPayments(sql: pg.Client, tenantId: string, requests: PayRequest[], fake: StripeFake, boundMs: number, problems: string[]): Promise<PaymentCheck> {
  const note = (p: string) => {
    if (problems.length < 50) problems.push(p);
  };
  const end = performance.now() + boundMs;
  let waiting = 0;
  for (;;) {
    waiting = (await sql.query<{ n: number }>(
      `SELECT (SELECT count(*) FROM transactions WHERE tenant_id = $1 AND (pending IS NOT NULL OR status = 'processing'))
            + (SELECT count(*) FROM refunds WHERE tenant_id = $1 AND (pending OR status = 'processing')) AS n`,
      [tenantId],
    )).rows[0].n;
    if (Number(waiting) === 0 || performance.now() > end) break;
    await sleep(250);
  }
  const transactions = (await sql.query(
    `SELECT id, status, pending, amount, captured_amount, refunded_amount, connection_transaction_id, metadata->>'crash_seq' AS seq
     FROM transactions WHERE tenant_id = $1`,
    [tenantId],
  )).rows as { id: string; status: string; pending: unknown; amount: string; captured_amount: string; refunded_amount: string; connection_transaction_id: string | null; seq: string | null }[];
  const refunds = (await sql.query(`SELECT id, transaction_id, status, pending, amount FROM refunds WHERE tenant_id = $1`, [tenantId])).rows as {
    id: string; transaction_id: string; status: string; pending: boolean; amount: string;
  }[];
  const out: PaymentCheck = { transactions: transactions.length, refunds: refunds.length, lost: 0, stuck: 0, doubleCharges: 0, duplicates: 0, mismatched: 0, repeated: 0 };
  const byId = new Map(transactions.map((t) => [t.id, t]));
  const refundById = new Map(refunds.map((r) => [r.id, r]));

  for (const t of transactions) {
    if (t.pending !== null || t.status === 'processing') {
      out.stuck++;
      note(`transaction ${t.id} still ${t.status}${t.pending ? ` pending ${JSON.stringify(t.pending)}` : ''} ${Math.round(boundMs / 1000)} s after the load`);
    }
  }
  for (const r of refunds) {
    if (r.pending || r.status === 'processing') {
      out.stuck++;
      note(`refund ${r.id} still ${r.status}${r.pending ? ' pending its call' : ''} ${Math.round(boundMs / 1000)} s after the load`);
    }
  }

  // Acknowledged: exists, in the acknowledged status or a later one.
  for (const req of requests.filter((r) => r.acked)) {
    if (req.kind === 'transaction') {
      const t = byId.get(req.reply.id);
      let why: string | undefined;
      if (!t) why = 'missing';
      else if (t.seq !== String(req.seq)) why = `metadata.crash_seq ${t.seq}`;
      else if (t.status !== req.reply.status && !(LATER[req.reply.status] ?? []).some((s) => s === '*' || s === t.status)) why = `status ${t.status}, acknowledged ${req.reply.status}`;
      if (why) {
        out.lost++;
        note(`acknowledged transaction ${req.reply.id} (seq ${req.seq}): ${why}`);
      }
    } else {
      const r = refundById.get(req.reply.id);
      let why: string | undefined;
      if (!r) why = 'missing';
      else if (Number(r.amount) !== req.body.amount || r.transaction_id !== req.reply.transaction_id) why = `amount ${r.amount} of transaction ${r.transaction_id}`;
      else if (r.status !== req.reply.status && req.reply.status !== 'processing') why = `status ${r.status}, acknowledged ${req.reply.status}`;
      if (why) {
        out.lost++;
        note(`acknowledged refund ${req.reply.id} (seq ${req.seq}): ${why}`);
      }
    }
  }

  // One transaction per idempotency key.
  const perSeq = new Map<string, number>();
  for (const t of transactions) perSeq.set(t.seq ?? 'none', (perSeq.get(t.seq ?? 'none') ?? 0) + 1);
  for (const [seq, n] of perSeq) {
    if (n > 1) {
      out.duplicates++;
      note(`idempotency key of payment seq ${seq} made ${n} transactions`);
    }
  }

  // What Stripe (the fake) holds: one PaymentIntent per transaction, each for a transaction Coffer has.
  const byReconciliation = new Map(transactions.map((t) => [reconciliationId(t.id), t]));
  const intentsOf = new Map<string, string[]>();
  for (const pi of fake.intents.values()) {
    const rid = String(pi.metadata?.coffer_reconciliation_id ?? '');
    const t = byReconciliation.get(rid);
    if (!t) {
      out.doubleCharges++;
      note(`PaymentIntent ${pi.id} (${pi.status}, ${pi.amount}) names no transaction Coffer holds (reconciliation id ${rid || 'none'})`);
      continue;
    }
    intentsOf.set(t.id, [...(intentsOf.get(t.id) ?? []), pi.id]);
    const refunded = refunds.filter((r) => r.transaction_id === t.id && (r.status === 'succeeded' || r.status === 'processing')).reduce((n, r) => n + Number(r.amount), 0);
    if ((pi.amount_refunded ?? 0) !== refunded) {
      out.doubleCharges++;
      note(`PaymentIntent ${pi.id} of transaction ${t.id}: Stripe refunded ${pi.amount_refunded ?? 0}, Coffer's live refunds sum to ${refunded}`);
    }
    if (t.status === 'capture_succeeded' && pi.amount_received !== Number(t.captured_amount)) {
      out.mismatched++;
      note(`transaction ${t.id}: captured ${t.captured_amount}, Stripe received ${pi.amount_received}`);
    }
  }
  for (const [id, pis] of intentsOf) {
    if (pis.length > 1) {
      out.doubleCharges += pis.length - 1;
      note(`transaction ${id} has ${pis.length} PaymentIntents: ${pis.join(', ')}`);
    }
  }
  const authorizeKeys = new Map<string, Set<string>>();
  const refundKeys = new Set<string>();
  for (const r of fake.requests) {
    const key = String(r.headers['idempotency-key'] ?? '');
    if (r.method === 'POST' && r.path === '/v1/payment_intents') {
      if (authorizeKeys.has(key)) out.repeated++;
      authorizeKeys.set(key, new Set([...(authorizeKeys.get(key) ?? []), r.body]));
    }
    if (r.method === 'POST' && r.path === '/v1/refunds') {
      if (refundKeys.has(key)) out.repeated++;
      refundKeys.add(key);
    }
  }
  for (const [key, bodies] of authorizeKeys) {
    const id = /^([0-9a-f-]{36}):authorize(:.*)?$/.exec(key)?.[1];
    if (!id || !byId.has(id)) {
      out.doubleCharges++;
      note(`an authorization was sent to Stripe under key ${key}, which names no transaction Coffer holds`);
    } else if (bodies.size > 1) {
      note(`key ${key} was sent with ${bodies.size} different requests`);
      out.doubleCharges++;
    }
  }
  for (const key of refundKeys) {
    const id = /^([0-9a-f-]{36}):refund$/.exec(key)?.[1];
    if (!id || !refundById.has(id)) {
      out.doubleCharges++;
      note(`a refund was sent to Stripe under key ${key}, which names no refund Coffer holds`);
    }
  }

  // Refunded amounts: the sum of the live refunds, never more than was captured.
  for (const t of transactions) {
    const live = refunds.filter((r) => r.transaction_id === t.id && (r.status === 'succeeded' || r.status === 'processing')).reduce((n, r) => n + Number(r.amount), 0);
    if (Number(t.refunded_amount) !== live || Number(t.refunded_amount) > Number(t.captured_amount)) {
      out.mismatched++;
      note(`transaction ${t.id}: refunded_amount ${t.refunded_amount}, its live refunds sum to ${live}, captured ${t.captured_amount}`);
    }
  }
  return out;
}
