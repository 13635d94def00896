/**
 * Rate limiting of anonymous proxy invocations (require_auth false): the proxy key alone
 * lets a request through, so each (proxy, client address) gets a budget of its own.
 */
/**
 * In-process token buckets for anonymous invocations, one per (proxy, client address):
 * `rate` tokens a second up to `burst`. Full buckets are dropped when the map grows, so
 * memory stays bounded; every process counts on its own (see docs/proxies.md).
 */
export class TokenBuckets {
  readonly #rate: number;
  readonly #burst: number;
  readonly #buckets = new Map<string, { tokens: number; at: number }>();

  constructor(rate: number, burst: number) {
    this.#rate = rate;
    this.#burst = Math.max(1, burst);
  }

  /** 0 when a request may go now, else the whole seconds until one may. */
  take(key: string, now = Date.now()): number {
    if (this.#rate <= 0) return 0;
    let b = this.#buckets.get(key);
    if (!b) {
      if (this.#buckets.size >= 100_000) this.#sweep(now);
      b = { tokens: this.#burst, at: now };
      this.#buckets.set(key, b);
    }
    b.tokens = Math.min(this.#burst, b.tokens + ((now - b.at) / 1000) * this.#rate);
    b.at = now;
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - b.tokens) / this.#rate));
  }

  #sweep(now: number): void {
    for (const [key, b] of this.#buckets) {
      if (b.tokens + ((now - b.at) / 1000) * this.#rate >= this.#burst) this.#buckets.delete(key);
    }
    // Still full of busy buckets: forget the oldest half rather than grow without bound.
    if (this.#buckets.size >= 100_000) {
      let n = this.#buckets.size / 2;
      for (const key of this.#buckets.keys()) {
        if (n-- <= 0) break;
        this.#buckets.delete(key);
      }
    }
  }
}
