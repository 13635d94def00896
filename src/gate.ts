/**
 * A counting semaphore with a bounded queue: at most `max` calls of `run` at once, the rest
 * waiting their turn in order; past `maxQueue` waiting, a call is refused at once with the
 * error `refuse` makes rather than waiting forever.
 */
export class Gate {
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly max: number;
  private readonly maxQueue: number;
  private readonly refuse: () => Error;

  constructor(max: number, opts: { maxQueue?: number; refuse?: () => Error } = {}) {
    this.max = max;
    this.maxQueue = opts.maxQueue ?? Infinity;
    this.refuse = opts.refuse ?? (() => new Error('too many calls are waiting'));
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    return this.#enter(fn, this.maxQueue);
  }

  /** run(), except that with no slot free now the call is refused at once (with `refuse`'s error, if given) instead of waiting. */
  async tryRun<T>(fn: () => Promise<T>, refuse = this.refuse): Promise<T> {
    return this.#enter(fn, 0, refuse);
  }

  async #enter<T>(fn: () => Promise<T>, maxQueue: number, refuse = this.refuse): Promise<T> {
    if (this.active >= this.max) {
      if (this.waiting.length >= maxQueue) throw refuse();
      // Woken holding the slot its predecessor handed over (below): `active` already counts it.
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.active++;
    }
    try {
      return await fn();
    } finally {
      // The slot passes straight to the first waiter, so a caller arriving before that waiter
      // resumes finds none free and cannot push the count past max.
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }
}
