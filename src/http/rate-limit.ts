/**
 * In-process token buckets, one per key (an anonymous proxy's (proxy, client address), a
 * public key's token creation): `rate` tokens a second up to `burst`. Full buckets are
 * dropped when the map grows, so memory stays bounded; every process counts on its own
 * (see docs/proxies.md, docs/vault.md).
 */
export class TokenBuckets {
  readonly #rate: number;
  readonly #burst: number;
  readonly #buckets = new Map<string, { tokens: number; at: number }>();

  constructor(rate: number, burst: number) {
    this.#rate = rate;
    this.#burst = Math.max(1, burst);
  }

  /**
   * Takes `cost` tokens: 0 when the request may go now, else the whole seconds until it may
   * (and nothing is taken). A request costing more than the burst goes when the bucket is
   * full, and leaves it that much in debt: over time no more than `rate` passes whatever the
   * requests' sizes.
   */
  take(key: string, now = Date.now(), cost = 1): number {
    const wait = this.wait(key, now, cost);
    if (wait === 0 && this.#rate > 0) this.#buckets.get(key)!.tokens -= cost;
    return wait;
  }

  /** What take would answer, without taking anything: for a request that must pass several buckets. */
  wait(key: string, now = Date.now(), cost = 1): number {
    if (this.#rate <= 0) return 0;
    let b = this.#buckets.get(key);
    if (!b) {
      if (this.#buckets.size >= 100_000) this.#sweep(now);
      b = { tokens: this.#burst, at: now };
      this.#buckets.set(key, b);
    }
    b.tokens = Math.min(this.#burst, b.tokens + ((now - b.at) / 1000) * this.#rate);
    b.at = now;
    const needed = Math.min(cost, this.#burst);
    if (b.tokens >= needed) return 0;
    return Math.max(1, Math.ceil((needed - b.tokens) / this.#rate));
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
