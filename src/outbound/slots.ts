/**
 * Admission to the outbound pools: per origin, at most `perOrigin` requests in flight (each
 * holds a pooled connection until its answer's body is done), and of those at most `perTenant`
 * for any one tenant. Tenants choose their destinations and how slowly those answer: without
 * the second bound one tenant's slow calls could hold every connection to an origin others
 * use too (a payment processor, say), and everyone else's calls would queue behind them.
 *
 * Waiting calls are served by tenant, not in arrival order: when a slot frees, it goes to
 * the waiting tenant holding the fewest (in turn among equals), so a tenant's long queue of
 * its own does not stand in front of another's first call. A tenant at its share waits for
 * one of its own calls to finish, whatever else is free.
 */
export class OriginSlots {
  readonly #perOrigin: number;
  readonly #perTenant: number;
  readonly #origins = new Map<string, Origin>();

  constructor(perOrigin: number, perTenant: number) {
    this.#perOrigin = perOrigin;
    this.#perTenant = Math.min(perTenant, perOrigin);
  }

  /**
   * The function that gives the call's slot back (once, however often called): at once when a
   * slot is free, else a promise of it once one is handed over, rejected with the signal's reason
   * if it aborts first. A free slot is the common case and costs the call no promise. `tenant`
   * '' stands for calls made for no tenant, which share one share.
   */
  acquire(origin: string, tenant: string, signal: AbortSignal): Release | Promise<Release> {
    signal.throwIfAborted();
    let slots = this.#origins.get(origin);
    if (!slots) this.#origins.set(origin, (slots = { active: 0, byTenant: new Map(), waiting: new Map() }));
    if (slots.active < this.#perOrigin && (slots.byTenant.get(tenant) ?? 0) < this.#perTenant) {
      take(slots, tenant);
      return this.#releaser(origin, slots, tenant);
    }
    return this.#wait(origin, slots, tenant, signal);
  }

  /** Waits to be woken holding the slot (#handOver counted it before waking). */
  async #wait(origin: string, slots: Origin, tenant: string, signal: AbortSignal): Promise<Release> {
    await new Promise<void>((resolve, reject) => {
      const wake = () => {
        signal.removeEventListener('abort', abort);
        resolve();
      };
      const abort = () => {
        const queue = slots.waiting.get(tenant);
        queue?.delete(wake);
        if (queue?.size === 0) slots.waiting.delete(tenant);
        this.#forgetIfIdle(origin, slots);
        reject(signal.reason);
      };
      let queue = slots.waiting.get(tenant);
      if (!queue) slots.waiting.set(tenant, (queue = new Set()));
      queue.add(wake);
      signal.addEventListener('abort', abort, { once: true });
    });
    return this.#releaser(origin, slots, tenant);
  }

  #releaser(origin: string, slots: Origin, tenant: string): Release {
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      slots.active--;
      const mine = (slots.byTenant.get(tenant) ?? 1) - 1;
      if (mine === 0) slots.byTenant.delete(tenant);
      else slots.byTenant.set(tenant, mine);
      this.#handOver(slots);
      this.#forgetIfIdle(origin, slots);
    };
  }

  /**
   * Gives the freed slot to the waiting tenant below its share that holds the fewest (the
   * first in turn among equals), so a tenant that just arrived goes before the queue of one
   * that already holds slots.
   */
  #handOver(slots: Origin): void {
    if (slots.active >= this.#perOrigin) return;
    let chosen: string | undefined;
    let fewest = this.#perTenant;
    for (const tenant of slots.waiting.keys()) {
      const held = slots.byTenant.get(tenant) ?? 0;
      if (held < fewest) {
        chosen = tenant;
        fewest = held;
      }
    }
    if (chosen === undefined) return;
    const queue = slots.waiting.get(chosen)!;
    const [next] = queue;
    queue.delete(next);
    // To the back of the turn: Map keeps insertion order.
    slots.waiting.delete(chosen);
    if (queue.size > 0) slots.waiting.set(chosen, queue);
    take(slots, chosen);
    next();
  }

  #forgetIfIdle(origin: string, slots: Origin): void {
    if (slots.active === 0 && slots.waiting.size === 0 && this.#origins.get(origin) === slots) this.#origins.delete(origin);
  }
}

/** Gives a slot back. */
export type Release = () => void;

type Origin = {
  /** Calls holding a slot. */
  active: number;
  /** Of those, each tenant's (tenants holding none are absent). */
  byTenant: Map<string, number>;
  /** Waiting calls by tenant, tenants in their serving turn. */
  waiting: Map<string, Set<() => void>>;
};

function take(slots: Origin, tenant: string): void {
  slots.active++;
  slots.byTenant.set(tenant, (slots.byTenant.get(tenant) ?? 0) + 1);
}
