/** The share of an entry's life after which a value in use is looked up again in the background. */
const REFRESH_AFTER = 0.8;

type Entry<V> = { value: V; until: number; refreshAt: number };

/**
 * What a process keeps of values it looks up on every request (an API key's principal, a
 * tenant's quotas, the reactor or proxy invoked), for `ttlMs` after each lookup began.
 *
 * - Concurrent misses of one key share one lookup: a busy client's connections, all missing
 *   the moment an entry ends, would otherwise send one lookup each.
 * - A value in use is looked up again in the background from REFRESH_AFTER of its life on, and
 *   served meanwhile, so under steady traffic no caller waits for a lookup. The entry still
 *   ends when it would have, so how long a stale value may be served is what it was; a refresh
 *   that finds nothing drops the entry at once, and one that fails leaves it to end.
 * - A lookup that finds nothing (undefined) or fails is not kept, and fails every caller that
 *   shared it. After `invalidate()` (a change notice) no caller joins a lookup begun before it,
 *   and such a lookup answers its own callers but is not kept.
 * - With `ttlMs` 0 nothing is kept or shared: every call looks up on its own.
 */
export class LiveCache<V> {
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly entries = new Map<string, Entry<V>>();
  private readonly pending = new Map<string, { generation: number; value: Promise<V | undefined> }>();
  private generation = 0;

  constructor(ttlMs: number, maxEntries = 10_000) {
    this.ttlMs = Math.max(0, ttlMs);
    this.maxEntries = maxEntries;
  }

  /** The key's live value without waiting, its refresh started when due; undefined when none is live. */
  peek(key: string, load: () => Promise<V | undefined>): V | undefined {
    const entry = this.entries.get(key);
    const now = Date.now();
    if (!entry || entry.until <= now) return undefined;
    if (entry.refreshAt <= now) this.refresh(key, entry, load);
    return entry.value;
  }

  /** The key's live value, else the lookup under way for it, else a new lookup. */
  get(key: string, load: () => Promise<V | undefined>): Promise<V | undefined> {
    const live = this.peek(key, load);
    return live === undefined ? this.lookup(key, load) : Promise.resolve(live);
  }

  invalidate(): void {
    this.generation++;
    this.entries.clear();
    this.pending.clear();
  }

  private refresh(key: string, entry: Entry<V>, load: () => Promise<V | undefined>): void {
    entry.refreshAt = Infinity;
    this.lookup(key, load).then(
      (found) => {
        if (found === undefined && this.entries.get(key) === entry) this.entries.delete(key);
      },
      () => {},
    );
  }

  private lookup(key: string, load: () => Promise<V | undefined>): Promise<V | undefined> {
    if (this.ttlMs === 0) return start(load);
    const generation = this.generation;
    const shared = this.pending.get(key);
    if (shared && shared.generation === generation) return shared.value;
    const started = Date.now();
    const value = start(load);
    const flight = { generation, value };
    this.pending.set(key, flight);
    const done = () => {
      if (this.pending.get(key) === flight) this.pending.delete(key);
    };
    value.then((found) => {
      done();
      if (found !== undefined && generation === this.generation) this.remember(key, found, started);
    }, done);
    return value;
  }

  private remember(key: string, value: V, now: number): void {
    if (!this.entries.has(key) && this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, { value, until: now + this.ttlMs, refreshAt: now + REFRESH_AFTER * this.ttlMs });
  }
}

/** A lookup that throws before its first await fails its callers like one that rejects. */
function start<V>(load: () => Promise<V>): Promise<V> {
  try {
    return load();
  } catch (err) {
    return Promise.reject(err);
  }
}
