/**
 * Coalesces concurrent calls into batches: every item submitted while the event loop works
 * through one round of I/O is handed to `run` together, at the next check phase
 * (setImmediate). With many requests in flight a batch holds many items, so one statement
 * and one round trip to PostgreSQL serve them all; a lone request waits for nothing but
 * the end of its own turn of the loop.
 *
 * At most `maxInFlight` batches run at once; items arriving meanwhile wait, and go out as
 * the next batch the moment a running one returns.
 * When a batch of several items fails, its halves are run again, one after the other in
 * the batch's slot, and so on down to the failing items alone (when `isolateFailures`), so
 * one bad item fails only its own caller: one bad item of 256 costs 16 more runs, not
 * 256 at once that would bypass `maxInFlight` and queue for the pool ahead of everyone
 * else's work. Only a failure the items may have caused, and that left nothing done, is
 * retried (`isolable`): a batch whose outcome is unknown (a connection lost before the
 * reply) may have been written, and running its items again would write them twice.
 */
export type CoalescerOptions<In> = {
  /** Largest number of items in one batch. */
  maxBatch: number;
  /** An item's weight (its bytes, say), and the most a batch of several may weigh; unbounded when not given. */
  weigh?: (item: In) => number;
  maxBatchWeight?: number;
  /**
   * The most items, and weight, that may wait for a batch: past either an item is refused at
   * once (QueueFull) rather than held in memory for a database too slow to take it.
   * 16 rounds of full batches, and unbounded weight, when not given.
   */
  maxQueued?: number;
  maxQueuedWeight?: number;
  /** Batches running at the same time (each typically holds a pooled connection). */
  maxInFlight: number;
  /** Retry the items of a failed batch in parts, down to one by one, so each caller gets its own outcome. */
  isolateFailures: boolean;
  /**
   * Whether a batch's failure may be retried in parts: it says the batch did nothing
   * and one of its items may be the cause. Every failure of `run`, when not given; a
   * result that does not fit the batch (a run that answered) is never retried.
   */
  isolable?: (error: unknown) => boolean;
};

/**
 * An item refused because too many wait already. It carries PostgreSQL's SQLSTATE for too
 * many connections, so it is answered as any database out of reach (503, Retry-After).
 */
export class QueueFull extends Error {
  readonly code = '53300';
}

type Waiting<In, Out> = { item: In; weight: number; resolve: (out: Out) => void; reject: (err: unknown) => void };

export class Coalescer<In, Out> {
  private queue: Waiting<In, Out>[] = [];
  private queuedWeight = 0;
  private inFlight = 0;
  private scheduled = false;
  private readonly run: (items: In[]) => Promise<Out[]>;
  private readonly opts: CoalescerOptions<In>;

  /** `run` must answer with one result per item, in the items' order. */
  constructor(run: (items: In[]) => Promise<Out[]>, opts: CoalescerOptions<In>) {
    this.run = run;
    this.opts = opts;
  }

  /** Items waiting for a batch (those of the batches running not counted). */
  get queued(): number {
    return this.queue.length;
  }

  submit(item: In): Promise<Out> {
    const weight = this.opts.weigh?.(item) ?? 0;
    const maxQueued = this.opts.maxQueued ?? 16 * this.opts.maxBatch * this.opts.maxInFlight;
    if (this.queue.length >= maxQueued || this.queuedWeight + weight > (this.opts.maxQueuedWeight ?? Infinity)) {
      return Promise.reject(new QueueFull(`too many database operations are waiting (${this.queue.length}); retry shortly`));
    }
    return new Promise<Out>((resolve, reject) => {
      this.queue.push({ item, weight, resolve, reject });
      this.queuedWeight += weight;
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.opts.maxInFlight || this.queue.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.dispatch();
    });
  }

  /** Starts batches from the queue while slots are free. */
  private dispatch(): void {
    while (this.inFlight < this.opts.maxInFlight && this.queue.length > 0) {
      const size = this.batchSize();
      const batch = size === this.queue.length ? this.queue : this.queue.slice(0, size);
      this.queue = batch === this.queue ? [] : this.queue.slice(size);
      // The sum kept exact: once nothing waits, nothing weighs.
      this.queuedWeight = this.queue.length === 0 ? 0 : this.queuedWeight - batch.reduce((n, w) => n + w.weight, 0);
      this.inFlight++;
      void this.settle(batch);
    }
  }

  /** How many of the queued items make the next batch: at least one, however heavy. */
  private batchSize(): number {
    const most = Math.min(this.queue.length, this.opts.maxBatch);
    const limit = this.opts.maxBatchWeight ?? Infinity;
    let weight = this.queue[0].weight;
    let n = 1;
    while (n < most && weight + this.queue[n].weight <= limit) weight += this.queue[n++].weight;
    return n;
  }

  /**
   * Runs one batch in its slot. The slot is handed to the next queued batch before this
   * batch's callers continue: the next statement is on its way to the database while the
   * callers of this one write their responses, instead of after.
   */
  private async settle(batch: Waiting<In, Out>[]): Promise<void> {
    const outcomes = await this.attempt(batch);
    this.inFlight--;
    this.dispatch();
    batch.forEach((w, i) => {
      const o = outcomes[i];
      if (o.ok) w.resolve(o.value);
      else w.reject(o.error);
    });
  }

  /** Each item's outcome; never rejects. A failed batch of several is retried in halves when `isolateFailures`. */
  private async attempt(batch: Waiting<In, Out>[]): Promise<Outcome<Out>[]> {
    let outs: Out[];
    try {
      outs = await this.run(batch.map((w) => w.item));
    } catch (error) {
      const retry = batch.length > 1 && this.opts.isolateFailures && (this.opts.isolable?.(error) ?? true);
      if (!retry) return batch.map(() => ({ ok: false, error }));
      const half = Math.ceil(batch.length / 2);
      const first = await this.attempt(batch.slice(0, half));
      return [...first, ...(await this.attempt(batch.slice(half)))];
    }
    // The run did its work: a mismatch fails every item, and running them again would repeat it.
    if (outs.length !== batch.length) {
      const error = new Error(`a batch of ${batch.length} items produced ${outs.length} results`);
      return batch.map(() => ({ ok: false, error }));
    }
    return outs.map((value) => ({ ok: true, value }));
  }
}

type Outcome<Out> = { ok: true; value: Out } | { ok: false; error: unknown };
