import { ApiError } from '../../http/errors.ts';

/** The gate's refusal: the run never started. */
export class BusyError extends ApiError {
  constructor() {
    super(429, 'Too many reactor runs are in progress; retry shortly.');
    this.retryAfterSeconds = 1;
  }
}

/** A counting semaphore with a bounded queue: past it, callers get 429 rather than waiting forever. */
export class Gate {
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly max: number;
  private readonly maxQueue: number;

  constructor(max: number, maxQueue: number) {
    this.max = max;
    this.maxQueue = maxQueue;
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active >= this.max) {
      if (this.waiting.length >= this.maxQueue) throw new BusyError();
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
