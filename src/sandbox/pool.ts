/**
 * Warm isolates, idle between runs, keyed by tenant + cache key + memory limit, least
 * recently used evicted first. An isolate is taken out while it runs, so no two runs ever
 * share one, and a key that includes the tenant means no two tenants ever do. Each keeps the
 * context of its last clean run (the loaded module, with its module-level state) for the next
 * run of the same code.
 */
import ivm from 'isolated-vm';
import type { Prepared } from './contexts.ts';
import type { SandboxFailure } from './types.ts';
import { RUNTIME_SOURCE } from './runtime.ts';

export type WarmIsolate = {
  key: string;
  tenantId: string;
  memoryMb: number;
  isolate: ivm.Isolate;
  /** The compiled runtime (./runtime/*.js); run once per context. */
  runtime: ivm.Script;
  /** The user's wrapped code, compiled once per isolate; undefined until the first run. */
  code?: string;
  script?: ivm.Script;
  /**
   * The context for the next run, made while the isolate is idle: the last run's context with
   * the module loaded (reset by the next run's arm), or a fresh one (prepare, ./contexts.ts),
   * see ./execute.ts. Undefined if it could not be made.
   */
  ready?: Promise<Prepared | undefined>;
  /** While a run is under way: ends it at once with this failure (the sandbox shutting down). */
  stop?: (error: SandboxFailure) => void;
  /** The host memory it held when last measured (bytes), which the pool's budget counts while it is idle. */
  heldBytes: number;
  /** Runs since it was last measured. */
  unmeasuredRuns: number;
  /** ICU memory (KB) of the Intl objects in the contexts it discarded (see ./memory-accounting.ts). */
  discardedIntlKb: number;
};

// V8's code cache for the runtime, made by the first isolate: later isolates skip parsing it.
let runtimeCache: ivm.ExternalCopy<ArrayBuffer> | undefined;

export async function createWarmIsolate(key: string, tenantId: string, memoryMb: number): Promise<WarmIsolate> {
  const isolate = new ivm.Isolate({ memoryLimit: memoryMb });
  try {
    const options = runtimeCache ? { filename: 'coffer-runtime.js', cachedData: runtimeCache } : { filename: 'coffer-runtime.js', produceCachedData: true };
    const runtime = (await isolate.compileScript(RUNTIME_SOURCE, options)) as ivm.Script & { cachedData?: ivm.ExternalCopy<ArrayBuffer> };
    if (!runtimeCache && runtime.cachedData) runtimeCache = runtime.cachedData;
    return { key, tenantId, memoryMb, isolate, runtime, heldBytes: 0, unmeasuredRuns: 0, discardedIntlKb: 0 };
  } catch (err) {
    disposeWarmIsolate({ isolate } as WarmIsolate);
    throw err;
  }
}

export function disposeWarmIsolate(w: WarmIsolate): void {
  try {
    if (!w.isolate.isDisposed) w.isolate.dispose();
  } catch {
    // already gone
  }
}

/**
 * Idle isolates keep what their code left in its module (up to the isolate's memory limit each)
 * and the Intl objects it holds: without a bound on their sum, one tenant's reactors could keep
 * max × the memory limit of the host's memory while doing nothing. Past `maxBytes` together,
 * the least recently used go first; one larger than that on its own is not kept.
 */
export class IsolatePool {
  readonly max: number;
  readonly maxBytes: number;
  #idle = new Map<string, WarmIsolate[]>();
  /** Every idle isolate, least recently used first (a Set keeps insertion order). */
  #lru = new Set<WarmIsolate>();
  #bytes = 0;

  constructor(max: number, maxBytes = Number.POSITIVE_INFINITY) {
    this.max = max;
    this.maxBytes = maxBytes;
  }

  get size(): number {
    return this.#lru.size;
  }

  /** What the idle isolates held together when last measured, in bytes. */
  get bytes(): number {
    return this.#bytes;
  }

  take(key: string): WarmIsolate | undefined {
    const list = this.#idle.get(key);
    const w = list?.pop();
    if (!w) return undefined;
    if (list!.length === 0) this.#idle.delete(key);
    this.#lru.delete(w);
    this.#bytes -= w.heldBytes;
    return w;
  }

  put(w: WarmIsolate): void {
    if (this.max <= 0 || w.isolate.isDisposed || w.heldBytes > this.maxBytes) {
      disposeWarmIsolate(w);
      return;
    }
    let list = this.#idle.get(w.key);
    if (!list) this.#idle.set(w.key, (list = []));
    list.push(w);
    this.#lru.add(w);
    this.#bytes += w.heldBytes;
    this.#trim();
  }

  /** A new measurement of `w`, idle here or not (then it counts from its next put). */
  measured(w: WarmIsolate, bytes: number): void {
    const idle = this.#lru.has(w);
    if (idle && bytes > this.maxBytes) {
      this.#remove(w);
      disposeWarmIsolate(w);
      return;
    }
    if (idle) this.#bytes += bytes - w.heldBytes;
    w.heldBytes = bytes;
    this.#trim();
  }

  #trim(): void {
    while (this.#lru.size > this.max || (this.#bytes > this.maxBytes && this.#lru.size > 0)) {
      const oldest = this.#lru.values().next().value!;
      this.#remove(oldest);
      disposeWarmIsolate(oldest);
    }
  }

  #remove(w: WarmIsolate): void {
    this.#bytes -= w.heldBytes;
    this.#lru.delete(w);
    const list = this.#idle.get(w.key);
    if (!list) return;
    const i = list.indexOf(w);
    if (i >= 0) list.splice(i, 1);
    if (list.length === 0) this.#idle.delete(w.key);
  }

  clear(): void {
    for (const w of this.#lru) disposeWarmIsolate(w);
    this.#lru.clear();
    this.#idle.clear();
    this.#bytes = 0;
  }
}
