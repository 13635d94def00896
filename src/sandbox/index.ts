/**
 * The sandbox for user code (reactors, proxy transforms), as the API process uses it. Code
 * runs in V8 isolates (./isolates.ts) inside sandbox processes (./process/), never in the API
 * process: V8 can end a process outright when an isolate exhausts memory in ways isolated-vm's
 * limit does not catch, and that must cost one sandbox process, not the service.
 *
 * - Runs are admitted by tenant (./fair-gate.ts): a tenant holds at most its share of the runs
 *   in progress and of the queue, so one tenant's slow or endless code delays only its own.
 * - Each tenant's runs go to one of the shared sandbox processes (by a hash of the tenant, so
 *   its warm isolates are found again). When a process ends unexpectedly with several tenants'
 *   runs in it, each run that had not yet asked its host for anything (no SDK call, no fetch:
 *   nothing of it can have been seen outside) runs again once; the others fail with a clear
 *   error, as do all runs when only one tenant's were in it. Every
 *   tenant with runs in that process then runs alone, in a process of its own, for a while
 *   (`quarantineMs`): the tenant whose code ended it can end only its own process after that.
 * - What a run asks of its host (SDK methods, fetch) is answered here, within a per-run budget
 *   of SDK-call time and a per-tenant bound on SDK calls at once, so that code calling `bt` in
 *   a loop cannot occupy the API process's event loop.
 *
 * The host hands in what the code may use — an SdkHost and a FetchBridge — so this folder
 * knows nothing of features: permissions are the host's business. See docs/reactors.md.
 */
import { Gate } from '../gate.ts';
import { FairGate } from './fair-gate.ts';
import { failure, runtimeFailure } from './failures.ts';
import { Inflight } from './inflight.ts';
import { IsolateSandbox } from './isolates.ts';
import { ProcessDied, SandboxProcess, Withdrawn, type ActiveRun, type CallPerformer } from './process/host.ts';
import type { CallFailure, CallMessage } from './process/protocol.ts';
import type { RunObserver, RunRequest, RunResult, SandboxFailure, SandboxLimits } from './types.ts';

export type { FetchBridge, FetchRequest, FetchResponse, RunObserver, RunRequest, RunResult, SandboxFailure, SandboxLimits, SdkHost } from './types.ts';
export { configurationTooLarge, DEFAULT_LIMITS, DEFAULT_MAX_WARM_BYTES, DEFAULT_MAX_WARM_ISOLATES, MAX_CONFIGURATION_BYTES } from './isolates.ts';
import { DEFAULT_LIMITS, DEFAULT_MAX_WARM_BYTES, DEFAULT_MAX_WARM_ISOLATES } from './isolates.ts';

export type SandboxOptions = {
  /** Idle warm isolates kept, and what they may hold, in all (each process keeps its part). */
  maxWarmIsolates?: number;
  maxWarmBytes?: number;
  limits?: Partial<SandboxLimits>;
  onRun?: RunObserver;
  /** Shared sandbox processes (quarantined tenants get processes of their own besides). */
  processes?: number;
  /** Runs in progress at once, of all tenants. */
  concurrency?: number;
  /** Runs in progress at once of one tenant. */
  tenantConcurrency?: number;
  /** Runs of one tenant waiting for a slot; past it a run is refused (429). */
  tenantQueue?: number;
  /**
   * Runs of one code a slot may be sent at once, one running and the rest waiting behind it in
   * the sandbox process (./fair-gate.ts); 1: a run is sent only once it has a slot to itself.
   */
  slotDepth?: number;
  /** Wall time a run may spend with SDK calls in progress, in ms. */
  hostCallBudgetMs?: number;
  /** SDK calls of one tenant's runs in progress at once; more wait. */
  tenantHostCalls?: number;
  /** How long a tenant whose runs were in a process that ended runs in a process of its own, in ms. */
  quarantineMs?: number;
  /** Added to sandbox processes' nice value (0, the default here: none; Coffer's SANDBOX_NICE is 10). */
  nice?: number;
  log?: { warn(obj: object, msg: string): void };
};

export const SANDBOX_DEFAULTS = Object.freeze({
  processes: 1,
  concurrency: 8,
  tenantQueue: 80,
  slotDepth: 8,
  hostCallBudgetMs: 10_000,
  tenantHostCalls: 8,
  quarantineMs: 10 * 60_000,
  nice: 0,
});

/**
 * A quarantined tenant's process ends when it has run nothing for this long (its next run
 * starts another): the processes alive are then the shared ones and those of the quarantined
 * tenants running code, which the admission bounds (at most `concurrency`).
 */
const QUARANTINE_IDLE_MS = 30_000;

function positive(v: number | undefined, fallback: number): number {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : fallback;
}

/** FNV-1a: a stable spread of tenants over the shared processes. */
function hash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** The failure of a run whose process ended under it. */
function diedFailure(outOfMemory: boolean): SandboxFailure {
  return outOfMemory
    ? failure(422, 'memory', 'The sandbox process running this code ran out of memory and was replaced: this run, or code running beside it, needed more than V8 could give. The run was stopped.')
    : failure(500, 'runtime', 'The sandbox process running this code stopped unexpectedly and was replaced. The run was stopped.');
}

export const busyFailure = () => failure(429, 'busy', 'Too many runs of this tenant are in progress or waiting; retry shortly.');

export class Sandbox {
  readonly #opts: Required<Omit<SandboxOptions, 'onRun' | 'log' | 'limits' | 'maxWarmIsolates' | 'maxWarmBytes'>>;
  readonly #limits: Partial<SandboxLimits> | undefined;
  readonly #observer: RunObserver | undefined;
  readonly #log: SandboxOptions['log'];
  readonly #childOptions: { maxWarmIsolates: number; maxWarmBytes: number; limits?: Partial<SandboxLimits> };
  readonly #checker: IsolateSandbox;
  readonly #gate: FairGate;
  readonly #groups = new Map<string, SandboxProcess>();
  /** Quarantined tenants: until when. Each runs in the group `tenant:<id>`. */
  readonly #quarantine = new Map<string, number>();
  /** Idle quarantine processes, ended when their timer fires. */
  readonly #idleTimers = new Map<string, NodeJS.Timeout>();
  readonly #hostGates = new Map<string, { gate: Gate; users: number }>();
  readonly #inflight = new Inflight();
  #restarts = 0;
  #disposed = false;

  constructor(opts: SandboxOptions = {}) {
    const processes = positive(opts.processes, SANDBOX_DEFAULTS.processes);
    const concurrency = positive(opts.concurrency, SANDBOX_DEFAULTS.concurrency);
    this.#opts = {
      processes,
      concurrency,
      tenantConcurrency: positive(opts.tenantConcurrency, Math.ceil(concurrency / 2)),
      slotDepth: positive(opts.slotDepth, SANDBOX_DEFAULTS.slotDepth),
      tenantQueue: typeof opts.tenantQueue === 'number' && opts.tenantQueue >= 0 ? Math.floor(opts.tenantQueue) : SANDBOX_DEFAULTS.tenantQueue,
      hostCallBudgetMs: positive(opts.hostCallBudgetMs, SANDBOX_DEFAULTS.hostCallBudgetMs),
      tenantHostCalls: positive(opts.tenantHostCalls, SANDBOX_DEFAULTS.tenantHostCalls),
      quarantineMs: typeof opts.quarantineMs === 'number' && opts.quarantineMs >= 0 ? opts.quarantineMs : SANDBOX_DEFAULTS.quarantineMs,
      nice: typeof opts.nice === 'number' && opts.nice >= 0 ? Math.floor(opts.nice) : SANDBOX_DEFAULTS.nice,
    };
    this.#limits = opts.limits;
    this.#observer = opts.onRun;
    this.#log = opts.log;
    const max = typeof opts.maxWarmIsolates === 'number' && Number.isFinite(opts.maxWarmIsolates) && opts.maxWarmIsolates >= 0 ? Math.floor(opts.maxWarmIsolates) : DEFAULT_MAX_WARM_ISOLATES;
    const bytes = typeof opts.maxWarmBytes === 'number' && opts.maxWarmBytes >= 0 ? opts.maxWarmBytes : DEFAULT_MAX_WARM_BYTES;
    // Each process keeps its part, so the whole stays within the budget: a tenant uses one process.
    this.#childOptions = { maxWarmIsolates: Math.ceil(max / processes), maxWarmBytes: Math.floor(bytes / processes), limits: opts.limits };
    // Compiles only, never runs code: it stays in this process.
    this.#checker = new IsolateSandbox({ maxWarmIsolates: 0, limits: opts.limits });
    this.#gate = new FairGate(concurrency, this.#opts.tenantConcurrency, this.#opts.tenantQueue, {
      depth: this.#opts.slotDepth,
      withdraw: (slot) => {
        for (const p of this.#groups.values()) p.withdraw(slot);
      },
    });
  }

  /** Idle isolates kept warm, in every sandbox process, as each reported after its last run. */
  get warmIsolates(): number {
    let n = 0;
    for (const p of this.#groups.values()) n += p.stats.warmIsolates;
    return n;
  }

  /** What the idle warm isolates held together when last measured, in bytes. */
  get warmBytes(): number {
    let n = 0;
    for (const p of this.#groups.values()) n += p.stats.warmBytes;
    return n;
  }

  /** Sandbox processes running now. */
  get processes(): number {
    return this.#groups.size;
  }

  /** The process ids of the sandbox processes running now. */
  get pids(): number[] {
    return [...this.#groups.values()].map((p) => p.pid).filter((pid): pid is number => pid !== undefined);
  }

  /** Sandbox processes that ended unexpectedly since start. */
  get restarts(): number {
    return this.#restarts;
  }

  /** Runs in progress and waiting now. */
  get runs(): { active: number; waiting: number } {
    return { active: this.#gate.active, waiting: this.#gate.waiting };
  }

  /** Compile-check only (no code runs), for write-time validation: syntax and length. */
  check(code: string): SandboxFailure | undefined {
    return this.#checker.check(code);
  }

  /**
   * Runs the code once. Never throws: whatever the code does comes back as `ok: false`. With
   * `wait: false` a run that finds no slot free for its tenant is refused at once (kind `busy`).
   */
  async run(r: RunRequest & { wait?: boolean }): Promise<RunResult> {
    const result = await this.#inflight.track(this.#admitted(r));
    if (this.#observer) {
      try {
        this.#observer(r, result);
      } catch {
        // Counting a run must never change its outcome.
      }
    }
    return result;
  }

  async #admitted(r: RunRequest & { wait?: boolean }): Promise<RunResult> {
    const started = performance.now();
    const fail = (error: SandboxFailure): RunResult => ({ ok: false, error, console: [], durationMs: Math.round((performance.now() - started) * 1000) / 1000 });
    if (this.#disposed) return fail(runtimeFailure('The sandbox has been shut down.'));
    if (typeof r.tenantId !== 'string' || r.tenantId === '' || typeof r.cacheKey !== 'string' || r.cacheKey === '') {
      return fail(runtimeFailure('A run needs a tenantId and a cacheKey.'));
    }
    let ticket = await this.#gate.acquire(r.tenantId, r.cacheKey, { wait: r.wait !== false });
    if (!ticket) return fail(busyFailure());
    try {
      const timeoutMs = positive(r.limits?.timeoutMs, positive(this.#limits?.timeoutMs, DEFAULT_LIMITS.timeoutMs));
      for (let attempt = 0; ; ) {
        if (this.#disposed) return fail(runtimeFailure('The sandbox has been shut down.'));
        const group = this.#groupOf(r.tenantId);
        try {
          return await this.#processFor(group).run(r, timeoutMs, ticket);
        } catch (err) {
          if (err instanceof Withdrawn) {
            // Taken back unstarted so that another tenant gets the slot: it waits here again.
            ticket.release();
            ticket = (await this.#gate.acquire(r.tenantId, r.cacheKey, { requeue: true }))!;
            continue;
          }
          if (!(err instanceof ProcessDied)) return fail(runtimeFailure());
          if (this.#disposed) return fail(runtimeFailure('The sandbox has been shut down.'));
          // Nothing of this run was seen outside its process, and other tenants' runs were in it
          // too (its own code may not be the cause): it runs again, once, in a process of its
          // tenant's own. A run alone with its tenant's runs is not: its code ended the process.
          if (err.effects || err.tenants <= 1 || ++attempt > 1) return fail(diedFailure(err.outOfMemory));
        } finally {
          this.#ranIn(group);
        }
      }
    } finally {
      ticket.release();
    }
  }

  /** The group of processes a tenant's runs go to now: its own while quarantined, else its shared one. */
  #groupOf(tenantId: string): string {
    const until = this.#quarantine.get(tenantId);
    if (until !== undefined && until > Date.now()) return `tenant:${tenantId}`;
    if (until !== undefined) this.#quarantine.delete(tenantId);
    return `shared:${hash(tenantId) % this.#opts.processes}`;
  }

  #processFor(group: string): SandboxProcess {
    clearTimeout(this.#idleTimers.get(group));
    this.#idleTimers.delete(group);
    let p = this.#groups.get(group);
    if (!p || p.dead) {
      p = new SandboxProcess({ child: this.#childOptions, perform: this.#perform, nice: this.#opts.nice, onExit: (gone, info) => this.#exited(group, gone, info) });
      this.#groups.set(group, p);
    }
    return p;
  }

  /** After a run in `group`: a quarantine process left idle goes after a while. */
  #ranIn(group: string): void {
    const p = this.#groups.get(group);
    if (!group.startsWith('tenant:') || !p || p.load > 0 || this.#disposed) return;
    clearTimeout(this.#idleTimers.get(group));
    const timer = setTimeout(() => {
      this.#idleTimers.delete(group);
      if (this.#groups.get(group) !== p || p.load > 0) return;
      this.#groups.delete(group);
      void p.close(1000);
    }, QUARANTINE_IDLE_MS);
    timer.unref();
    this.#idleTimers.set(group, timer);
  }

  #exited(group: string, p: SandboxProcess, info: { code: number | null; signal: string | null; stderr: string; outOfMemory: boolean; tenants: Set<string> }): void {
    if (this.#groups.get(group) === p) this.#groups.delete(group);
    if (this.#disposed) return;
    this.#restarts++;
    this.#log?.warn(
      { group, code: info.code, signal: info.signal, outOfMemory: info.outOfMemory, tenants: [...info.tenants], stderr: info.stderr.slice(-1024) },
      'a sandbox process ended unexpectedly; the tenants with runs in it now run in processes of their own',
    );
    if (this.#opts.quarantineMs === 0) return;
    const until = Date.now() + this.#opts.quarantineMs;
    for (const tenantId of info.tenants) this.#quarantine.set(tenantId, until);
  }

  /** Answers a run's SDK call or fetch with the run's own function, within the run's and the tenant's bounds. */
  readonly #perform: CallPerformer = async (active, m) => {
    const r = active.request;
    try {
      if (m.kind === 'fetch') {
        if (typeof r.fetch !== 'function') return { ok: false, error: { status: 403, message: 'outbound requests are not available to this code' } };
        return { ok: true, json: JSON.stringify(await r.fetch(m.request)) };
      }
      const sdk = r.sdk;
      const fn = sdk && Object.hasOwn(sdk, m.method) && typeof sdk[m.method] === 'function' ? sdk[m.method] : undefined;
      if (!fn) return { ok: false, error: { status: 400, message: `The SDK method ${String(m.method)} is not available.` } };
      if (!Array.isArray(m.args)) return { ok: false, error: { status: 400, message: 'The SDK arguments are not valid.' } };
      const value = await this.#hostCall(active, () => fn(...m.args));
      return { ok: true, json: value === undefined ? undefined : JSON.stringify(value) };
    } catch (err) {
      return { ok: false, error: callFailure(err) };
    }
  };

  /** One SDK call: refused past the run's budget, waiting while the tenant has its bound in progress. */
  async #hostCall<T>(active: ActiveRun, call: () => Promise<T>): Promise<T> {
    const budget = this.#opts.hostCallBudgetMs;
    const spent = () => active.hostMs + (active.pendingSdk > 0 ? performance.now() - active.pendingSince : 0);
    if (spent() >= budget) throw new BudgetError(budget);
    const tenantId = active.request.tenantId;
    let entry = this.#hostGates.get(tenantId);
    if (!entry) this.#hostGates.set(tenantId, (entry = { gate: new Gate(this.#opts.tenantHostCalls), users: 0 }));
    entry.users++;
    try {
      return await entry.gate.run(async () => {
        if (spent() >= budget) throw new BudgetError(budget);
        if (active.pendingSdk++ === 0) active.pendingSince = performance.now();
        try {
          return await call();
        } finally {
          if (--active.pendingSdk === 0) active.hostMs += performance.now() - active.pendingSince;
        }
      });
    } finally {
      if (--entry.users === 0) this.#hostGates.delete(tenantId);
    }
  }


  /**
   * Ends every sandbox process at once (runs in progress end with a runtime failure: nothing
   * of a process is worth keeping once the sandbox goes) and waits up to `waitMs` for them to
   * exit and for the runs to settle.
   */
  async dispose(waitMs = 2000): Promise<void> {
    this.#disposed = true;
    for (const timer of this.#idleTimers.values()) clearTimeout(timer);
    this.#idleTimers.clear();
    const closing = [...this.#groups.values()].map((p) => p.close(waitMs, true));
    this.#groups.clear();
    await this.#checker.dispose(waitMs);
    await this.#inflight.settle(waitMs + 500, closing);
  }
}

class BudgetError extends Error {
  readonly status = 429;
  constructor(budgetMs: number) {
    super(`This run has spent its budget of ${budgetMs} ms waiting on bt calls; no more are made for it.`);
  }
}

/** A host function's error as the sandbox may see it (src/sandbox/host-calls.ts's exposeError reads it). */
function callFailure(err: unknown): CallFailure {
  const e = err as { status?: unknown; expose?: unknown; detail?: unknown; message?: unknown; errors?: unknown; data?: unknown } | null;
  const status = e && typeof e.status === 'number' && Number.isInteger(e.status) && e.status >= 400 && e.status <= 599 ? e.status : undefined;
  // Not meant for users: its message may hold internals, and does not cross.
  if (status === undefined && !(e && e.expose === true)) return {};
  const f: CallFailure = status !== undefined ? { status } : { expose: true };
  if (typeof e!.detail === 'string') f.detail = e!.detail;
  if (typeof e!.message === 'string') f.message = e!.message;
  const data = e!.errors ?? e!.data;
  if (data !== undefined) {
    try {
      const json = JSON.stringify(data);
      if (json !== undefined) f.errors = JSON.parse(json);
    } catch {
      // not plain data: the error crosses without it
    }
  }
  return f;
}
