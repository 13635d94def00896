/** Work under way that a sandbox's dispose waits for, up to a bound. */
export class Inflight {
  readonly #work = new Set<Promise<unknown>>();

  get size(): number {
    return this.#work.size;
  }

  /** `work`, remembered until it settles. */
  track<T>(work: Promise<T>): Promise<T> {
    this.#work.add(work);
    const done = () => this.#work.delete(work);
    work.then(done, done);
    return work;
  }

  /** Resolves once the work tracked now and `also` have settled, or after `waitMs`, whichever is first. */
  async settle(waitMs: number, also: Promise<unknown>[] = []): Promise<void> {
    if (this.#work.size === 0 && also.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...also, ...this.#work]),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs).unref())),
    ]);
    clearTimeout(timer);
  }
}
