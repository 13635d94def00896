/**
 * The test processor's own books, in memory: answers by idempotency key (a repeated call returns
 * the first answer and moves no money again) and the payments it has authorized (what a real
 * acquirer would refuse: capturing a voided authorization, refunding more than was captured).
 *
 * Per process, and that is the point to know: a retry that lands on another Coffer process, or
 * after a restart, finds no entry here. The processor then decides again from the same inputs,
 * and because every id it makes is derived from the idempotency key and the outcome from the
 * amount and card, it answers the same — but that answer counts as a new operation in `stats()`,
 * a key reused with different parameters is not noticed, and an asynchronous capture or refund
 * it never saw is reported settled. No card data is kept: entries hold answers and amounts only.
 * Bounded: past `maxEntries` per map the oldest entries go (a long-running server with test
 * traffic). An entry costs ~0.5 KB of heap: at the default, the three maps hold at most ~15 MB,
 * whatever any tenant's test traffic (at 100,000 a run of test transactions grew the process by
 * ~80 MB that never came back, docs/benchmarks.md).
 * The composition root makes one per process and hands it to createProcessor (index.ts), so every
 * coffer-test processor built for a call shares it.
 */
export type Operation = 'authorize' | 'capture' | 'void' | 'refund';

export interface PaymentRecord {
  id: string;
  amount: number;
  authorized_amount: number;
  /** Pending or settled; 0 until captured. */
  captured_amount: number;
  refunded_amount: number;
  state: 'authorized' | 'capture_pending' | 'captured' | 'voided';
  settles_at?: number;
}

export interface RefundRecord {
  id: string;
  payment_id: string;
  amount: number;
  state: 'processing' | 'succeeded';
  settles_at?: number;
}

export interface LedgerStats {
  authorizations: number;
  captures: number;
  voids: number;
  refunds: number;
  replays: number;
}

interface Answer {
  operation: Operation;
  fingerprint: string;
  result: unknown;
}

export class TestLedger {
  readonly #answers = new Map<string, Answer>();
  readonly #payments = new Map<string, PaymentRecord>();
  readonly #refunds = new Map<string, RefundRecord>();
  readonly #stats: LedgerStats = { authorizations: 0, captures: 0, voids: 0, refunds: 0, replays: 0 };
  readonly #max: number;

  constructor(maxEntries = 10_000) {
    this.#max = maxEntries;
  }

  /** The earlier answer under this key; 'conflict' when the key was used for a different request. */
  replay<T>(key: string, operation: Operation, fingerprint: string): T | 'conflict' | undefined {
    const answer = this.#answers.get(key);
    if (!answer) return undefined;
    if (answer.operation !== operation || answer.fingerprint !== fingerprint) return 'conflict';
    this.#stats.replays++;
    return structuredClone(answer.result) as T;
  }

  /** Keeps the answer under its key; `moved` (money was held, captured, released or returned) counts it in stats(). */
  remember(key: string, operation: Operation, fingerprint: string, result: unknown, moved: boolean): void {
    bounded(this.#answers, this.#max, key).set(key, { operation, fingerprint, result: structuredClone(result) });
    const field = ({ authorize: 'authorizations', capture: 'captures', void: 'voids', refund: 'refunds' } as const)[operation];
    if (moved) this.#stats[field]++;
  }

  payment(id: string): PaymentRecord | undefined {
    return this.#payments.get(id);
  }

  savePayment(record: PaymentRecord): void {
    bounded(this.#payments, this.#max, record.id).set(record.id, record);
  }

  refund(id: string): RefundRecord | undefined {
    return this.#refunds.get(id);
  }

  saveRefund(record: RefundRecord): void {
    bounded(this.#refunds, this.#max, record.id).set(record.id, record);
  }

  /** Operations that moved money, and calls answered from an earlier answer instead. */
  stats(): LedgerStats {
    return { ...this.#stats };
  }
}

function bounded<K, V>(map: Map<K, V>, max: number, key: K): Map<K, V> {
  // Maps iterate in insertion order: the first key is the oldest. Updating a kept entry evicts nothing.
  while (!map.has(key) && map.size >= max) map.delete(map.keys().next().value as K);
  return map;
}
