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
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
    // No caller can take the slot between the finally below and this line: the woken waiter's
    // continuation is the next job queued after the slot is freed.
    this.active++;
    try {
      return await fn();
    } finally {
      this.active--;
      this.waiting.shift()?.();
    }
  }
}
