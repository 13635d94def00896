/**
 * Admission of runs by tenant: at most `max` slots in use at once in all, at most `perKey` of
 * them one tenant's, and at most `queuePerKey` of a tenant's runs waiting. A freed slot goes to
 * the tenants with runs waiting in turn (round robin), not to whoever queued first, so a tenant
 * that keeps its share busy — with endless loops, say — delays only its own runs: another
 * tenant's run waits at most for one slot of the other half to free, never behind the busy
 * tenant's queue.
 *
 * A slot runs one thing at a time, and what it runs is one code (a lane: the same reactor or
 * transform, the same isolate). When a tenant's share is in use, its next run of the same code
 * may wait *in* one of those slots instead of in the queue here: it rides the slot, sent to the
 * sandbox process at once and started there the moment the run before it ends (up to `depth`
 * runs per slot). It counts against the tenant's queue as any waiting run does, and it uses no
 * more isolates or threads: only the wait for the slot moves into the sandbox process, which
 * saves a round trip through both event loops per run and lets runs be sent and answered in
 * batches (docs/benchmarks.md).
 *
 * Riding never costs another tenant its turn: nobody rides while another tenant waits here for
 * a slot its share allows, and when one starts waiting with every slot in use, `withdraw` is
 * asked to take back the riders not yet started, so each slot frees after the run it is
 * running (they queue here again, at the front of their tenant's turn).
 */
export type Ticket = {
  /** The slot's number: the runs of one slot run one after another, in the order sent. */
  readonly slot: number;
  /** Runs of this slot sent before this one and perhaps not finished: the most it waits behind. */
  readonly ahead: number;
  /** Gives the ride back (once); the slot frees when its last rider has. */
  release(): void;
};

type Slot = { id: number; key: string; lane: string; riders: number };
type Waiter = { lane: string; requeued: boolean; resolve: (t: Ticket) => void };

export class FairGate {
  readonly max: number;
  readonly perKey: number;
  readonly queuePerKey: number;
  readonly depth: number;
  readonly #withdraw: (slot: number) => void;
  #active = 0;
  #nextSlot = 0;
  /** Each key's slots in use. */
  readonly #slots = new Map<string, Slot[]>();
  /** Waiting runs by key; the map's order is the round robin's (a served key moves to the end). */
  readonly #waiting = new Map<string, Waiter[]>();

  constructor(max: number, perKey: number, queuePerKey: number, opts: { depth?: number; withdraw?: (slot: number) => void } = {}) {
    this.max = Math.max(1, max);
    this.perKey = Math.max(1, Math.min(perKey, this.max));
    this.queuePerKey = Math.max(0, queuePerKey);
    this.depth = Math.max(1, Math.floor(opts.depth ?? 1));
    this.#withdraw = opts.withdraw ?? (() => undefined);
  }

  /** Slots in use now: runs in progress (for metrics and tests). */
  get active(): number {
    return this.#active;
  }

  /** Runs waiting now, of every key: here, or riding behind another run of their slot. */
  get waiting(): number {
    let n = 0;
    for (const queue of this.#waiting.values()) n += queue.length;
    for (const slots of this.#slots.values()) for (const s of slots) n += s.riders - 1;
    return n;
  }

  /**
   * Resolves holding a ticket for a run of `lane` by `key` (release it once the run is over),
   * or to undefined when the key's queue is full — at once, or when `wait` is false and no slot
   * is free for it now. `requeue`: a run given back by a withdrawal, at the front of its key's
   * turn, whatever the queue holds.
   */
  async acquire(key: string, lane: string, opts: { wait?: boolean; requeue?: boolean } = {}): Promise<Ticket | undefined> {
    if (this.#free(key) && !this.#waiting.has(key)) return this.#ride(this.#open(key, lane));
    if (opts.wait === false) return undefined;
    if (!opts.requeue) {
      if (this.#queued(key) >= this.queuePerKey) return undefined;
      const slot = this.#waiting.has(key) ? undefined : this.#rideable(key, lane);
      if (slot) return this.#ride(slot);
    }
    let queue = this.#waiting.get(key);
    if (!queue) this.#waiting.set(key, (queue = []));
    const ticket = new Promise<Ticket>((resolve) => {
      const waiter = { lane, requeued: opts.requeue === true, resolve };
      // Runs given back go first, in the order they were given back (the order they were sent).
      const at = waiter.requeued ? queue.findIndex((w) => !w.requeued) : -1;
      if (at >= 0) queue.splice(at, 0, waiter);
      else queue.push(waiter);
    });
    // Waiting only because every slot is in use: the riders of other keys give theirs up.
    if (this.#active >= this.max && this.#running(key) < this.perKey) this.#withdrawRiders(key);
    return ticket;
  }

  #running(key: string): number {
    return this.#slots.get(key)?.length ?? 0;
  }

  /** A key's runs waiting: in the queue here and riding behind another run of their slot. */
  #queued(key: string): number {
    let n = this.#waiting.get(key)?.length ?? 0;
    for (const s of this.#slots.get(key) ?? []) n += s.riders - 1;
    return n;
  }

  #free(key: string): boolean {
    return this.#active < this.max && this.#running(key) < this.perKey;
  }

  /** The key's slot of `lane` with the fewest riders and room for one more, unless another key waits. */
  #rideable(key: string, lane: string): Slot | undefined {
    if (this.depth <= 1 || this.#othersWait(key)) return undefined;
    let best: Slot | undefined;
    for (const s of this.#slots.get(key) ?? []) {
      if (s.lane === lane && s.riders < this.depth && (!best || s.riders < best.riders)) best = s;
    }
    return best;
  }

  /** Another key waits for a slot it may take: one with its share not in use (not one held back by its own share). */
  #othersWait(key: string): boolean {
    for (const k of this.#waiting.keys()) if (k !== key && this.#running(k) < this.perKey) return true;
    return false;
  }

  #withdrawRiders(waiting: string): void {
    for (const [key, slots] of this.#slots) {
      if (key === waiting) continue;
      for (const s of slots) if (s.riders > 1) this.#withdraw(s.id);
    }
  }

  /** A new slot for the key, not yet ridden. */
  #open(key: string, lane: string): Slot {
    const slot: Slot = { id: ++this.#nextSlot, key, lane, riders: 0 };
    this.#active++;
    const slots = this.#slots.get(key);
    if (slots) slots.push(slot);
    else this.#slots.set(key, [slot]);
    return slot;
  }

  #ride(slot: Slot): Ticket {
    const ahead = slot.riders++;
    let released = false;
    return {
      slot: slot.id,
      ahead,
      release: () => {
        if (released) return;
        released = true;
        this.#leave(slot);
      },
    };
  }

  #leave(slot: Slot): void {
    slot.riders--;
    if (slot.riders > 0) {
      this.#boardWaiters(slot);
      return;
    }
    this.#active--;
    const slots = this.#slots.get(slot.key)!;
    slots.splice(slots.indexOf(slot), 1);
    if (slots.length === 0) this.#slots.delete(slot.key);
    this.#dispatch();
  }

  /** Moves the slot's key's first waiters onto it while they run its code and nobody else waits. */
  #boardWaiters(slot: Slot): void {
    const queue = this.#waiting.get(slot.key);
    while (queue && queue.length > 0 && queue[0].lane === slot.lane && slot.riders < this.depth && !this.#othersWait(slot.key)) {
      const next = queue.shift()!;
      if (queue.length === 0) this.#waiting.delete(slot.key);
      next.resolve(this.#ride(slot));
    }
  }

  /** Hands free slots to waiting keys in turn, each key at most its share. */
  #dispatch(): void {
    let progressed = true;
    while (progressed && this.#active < this.max && this.#waiting.size > 0) {
      progressed = false;
      for (const [key, queue] of this.#waiting) {
        if (this.#active >= this.max) break;
        if (!this.#free(key)) continue;
        const next = queue.shift()!;
        // To the back of the turn: the next free slot goes to another key first.
        this.#waiting.delete(key);
        if (queue.length > 0) this.#waiting.set(key, queue);
        const slot = this.#open(key, next.lane);
        next.resolve(this.#ride(slot));
        this.#boardWaiters(slot);
        progressed = true;
        break;
      }
    }
  }
}
