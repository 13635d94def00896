/**
 * Admission of runs by tenant: at most `max` runs at once in all, at most `perKey` of them one
 * tenant's, and at most `queuePerKey` of a tenant's waiting. A freed slot goes to the tenants
 * with runs waiting in turn (round robin), not to whoever queued first, so a tenant that keeps
 * its share busy — with endless loops, say — delays only its own runs: another tenant's run
 * waits at most for one slot of the other half to free, never behind the busy tenant's queue.
 */
export class FairGate {
  readonly max: number;
  readonly perKey: number;
  readonly queuePerKey: number;
  #active = 0;
  readonly #running = new Map<string, number>();
  /** Waiting runs by key; the map's order is the round robin's (a served key moves to the end). */
  readonly #waiting = new Map<string, (() => void)[]>();

  constructor(max: number, perKey: number, queuePerKey: number) {
    this.max = Math.max(1, max);
    this.perKey = Math.max(1, Math.min(perKey, this.max));
    this.queuePerKey = Math.max(0, queuePerKey);
  }

  /** Runs in progress now (for metrics and tests). */
  get active(): number {
    return this.#active;
  }

  /** Runs waiting now, of every key. */
  get waiting(): number {
    let n = 0;
    for (const q of this.#waiting.values()) n += q.length;
    return n;
  }

  /**
   * Resolves holding a slot for `key` (release it with the returned function, once), or to
   * undefined when the key's queue is full — at once, or when `wait` is false and no slot is
   * free for it now.
   */
  async acquire(key: string, wait = true): Promise<(() => void) | undefined> {
    if (this.#free(key) && !this.#waiting.has(key)) {
      this.#take(key);
      return this.#releaser(key);
    }
    if (!wait) return undefined;
    const queue = this.#waiting.get(key) ?? [];
    if (queue.length >= this.queuePerKey) return undefined;
    if (queue.length === 0) this.#waiting.set(key, queue);
    // Woken holding the slot #dispatch took for it.
    await new Promise<void>((resolve) => queue.push(resolve));
    return this.#releaser(key);
  }

  #free(key: string): boolean {
    return this.#active < this.max && (this.#running.get(key) ?? 0) < this.perKey;
  }

  #take(key: string): void {
    this.#active++;
    this.#running.set(key, (this.#running.get(key) ?? 0) + 1);
  }

  #releaser(key: string): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#active--;
      const n = (this.#running.get(key) ?? 1) - 1;
      if (n > 0) this.#running.set(key, n);
      else this.#running.delete(key);
      this.#dispatch();
    };
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
        this.#take(key);
        next();
        progressed = true;
        break;
      }
    }
  }
}
