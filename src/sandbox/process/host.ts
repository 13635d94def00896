/**
 * One sandbox process (./child.ts), seen from the API process: sends it runs, answers the
 * SDK and fetch calls its runs make with the run's own functions, and turns its death into a
 * ProcessDied for each run it had in flight. It never throws a run's outcome away silently:
 * every run it accepted settles, with the result or with ProcessDied.
 */
import { fork, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import type { RunRequest, RunResult } from '../types.ts';
import { HEAP_FLAGS } from './heap-flags.ts';
import { Outbox, unbatch, type Batch } from './outbox.ts';
import type { CallFailure, CallMessage, ChildOptions, FromChild, ReplyMessage, Stats, ToChild } from './protocol.ts';

const CHILD = path.join(import.meta.dirname, 'child.ts');

/**
 * A run's process ended before the run did. `effects`: the run had asked for an SDK call or a
 * fetch. `tenants`: how many tenants had runs in the process then (1: only the run's own).
 */
export class ProcessDied extends Error {
  readonly effects: boolean;
  readonly outOfMemory: boolean;
  readonly tenants: number;
  constructor(effects: boolean, outOfMemory: boolean, tenants = 0) {
    super('the sandbox process ended');
    this.effects = effects;
    this.outOfMemory = outOfMemory;
    this.tenants = tenants;
  }
}

/** A run taken back before it started (../fair-gate.ts): nothing of it ran, and it may be sent again. */
export class Withdrawn extends Error {
  constructor() {
    super('the run was taken back before it started');
  }
}

/** What V8 writes when it ends a process for want of memory. */
const OUT_OF_MEMORY = /out of memory|Last few GCs|last resort|allocation failed/i;

/** Performs a run's host call; the sandbox facade wraps the run's functions with its limits. */
export type CallPerformer = (active: ActiveRun, message: CallMessage) => Promise<{ ok: true; json: string | undefined } | { ok: false; error: CallFailure }>;

export type ActiveRun = {
  readonly request: RunRequest;
  /** Set by the first SDK call or fetch: from then on the run cannot be re-run elsewhere. */
  effects: boolean;
  /** The facade's per-run accounting of host calls. */
  hostMs: number;
  pendingSdk: number;
  pendingSince: number;
};

type Entry = ActiveRun & { slot: number; resolve(r: RunResult): void; reject(e: ProcessDied | Withdrawn): void; deadline: NodeJS.Timeout };

/**
 * The environment a sandbox process gets: what Node needs, never Coffer's secrets (COFFER_KEYS,
 * DATABASE_URL, …). glibc's malloc gives each thread that allocates an arena of its own, up to
 * 8 per core, and isolated-vm runs isolates on a pool of threads (and on a new thread when the
 * pool is busy): two arenas held 10 MB less of a sandbox process's memory after 100,000 runs,
 * at the same CPU per run (docs/benchmarks.md). An operator's own MALLOC_ARENA_MAX wins.
 */
function sandboxEnv(): NodeJS.ProcessEnv {
  const keep = /^(MALLOC_ARENA_MAX|PATH|HOME|TMPDIR|TZ|LANG|LC_[A-Z]+|UV_THREADPOOL_SIZE|NODE_COMPILE_CACHE|NODE_DISABLE_COMPILE_CACHE)$/;
  return { MALLOC_ARENA_MAX: '2', ...Object.fromEntries(Object.entries(process.env).filter(([k]) => keep.test(k))) };
}

/** A sandbox process's Node flags: its heap's (./heap-flags.ts), none of the API process's others. */
export const SANDBOX_EXEC_ARGV = ['--disable-warning=ExperimentalWarning', ...HEAP_FLAGS];

/** How long past a run's own time limit its process may stay silent before it is taken for hung. */
export const HUNG_GRACE_MS = 10_000;
const STDERR_TAIL = 4096;

export class SandboxProcess {
  readonly #child: ChildProcess;
  readonly #runs = new Map<number, Entry>();
  readonly #perform: CallPerformer;
  readonly #outbox = new Outbox<ToChild>((m) => this.#write(m));
  readonly #ready: Promise<boolean>;
  #nextRun = 0;
  /** Runs waiting for the process to be ready. */
  #starting = 0;
  #dead = false;
  #stderr = '';
  #closing = false;
  /** Called once the process's end has been handled. */
  #exited: () => void = () => undefined;
  stats: Stats = { warmIsolates: 0, warmBytes: 0 };

  constructor(opts: {
    child: ChildOptions;
    perform: CallPerformer;
    /** Told once when the process has ended, whatever the reason, with the last of what it wrote to stderr. */
    onExit: (p: SandboxProcess, info: { code: number | null; signal: string | null; stderr: string; outOfMemory: boolean; tenants: Set<string> }) => void;
    /** Added to the process's nice value: user code yields the CPU to the API process. */
    nice: number;
  }) {
    this.#perform = opts.perform;
    this.#child = fork(CHILD, [JSON.stringify(opts.child)], {
      execArgv: SANDBOX_EXEC_ARGV,
      env: sandboxEnv(),
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      serialization: 'json',
    });
    if (opts.nice > 0 && this.#child.pid !== undefined) {
      try {
        os.setPriority(this.#child.pid, Math.min(19, os.getPriority(process.pid) + opts.nice));
      } catch {
        // Not permitted here: the process runs at the API process's priority.
      }
    }
    this.#child.unref();
    this.#child.stderr!.setEncoding('utf8');
    this.#child.stderr!.on('data', (s: string) => {
      this.#stderr = (this.#stderr + s).slice(-STDERR_TAIL);
    });
    (this.#child.stderr as unknown as { unref?: () => void }).unref?.();
    this.#idle();
    let ready!: (ok: boolean) => void;
    this.#ready = new Promise((resolve) => (ready = resolve));
    this.#child.on('message', (batch: FromChild | Batch<FromChild>) => {
      for (const m of unbatch(batch)) {
        if (m.t === 'ready') ready(true);
        else if (m.t === 'done') this.#done(m.run, m.result, m.stats);
        else if (m.t === 'withdrawn') this.#withdrawn(m.run);
        else if (m.t === 'call') this.#call(m);
      }
    });
    this.#child.on('error', () => this.#child.kill('SIGKILL'));
    // Handled once what it wrote to stderr has been read (its pipe ended; 'close' never comes for
    // a process whose channel this side disconnected), or 5 s after its exit at the latest: a
    // shorter bound, on a loaded host, fired before the pipe's last data (V8's "out of memory")
    // had been read, and the runs failed as a crash.
    const stderrEnded = new Promise<void>((resolve) => this.#child.stderr!.once('close', () => resolve()));
    this.#child.once('exit', (code, signal) => {
      this.#dead = true;
      ready(false);
      let timer: NodeJS.Timeout | undefined;
      void Promise.race([stderrEnded, new Promise<void>((resolve) => (timer = setTimeout(resolve, 5000)))]).then(() => {
        clearTimeout(timer);
        const outOfMemory = OUT_OF_MEMORY.test(this.#stderr);
        const tenants = this.tenants();
        for (const [, e] of this.#runs) {
          clearTimeout(e.deadline);
          e.reject(new ProcessDied(e.effects, outOfMemory, tenants.size));
        }
        this.#runs.clear();
        opts.onExit(this, { code, signal, stderr: this.#stderr, outOfMemory, tenants });
        this.#exited();
      });
    });
  }

  /** close() was called: its end is expected. */
  get closing(): boolean {
    return this.#closing;
  }

  get dead(): boolean {
    return this.#dead;
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  /** Runs in flight here now. */
  get load(): number {
    return this.#runs.size;
  }

  /** The tenants with runs in flight here now. */
  tenants(): Set<string> {
    return new Set([...this.#runs.values()].map((e) => e.request.tenantId));
  }

  /**
   * Resolves with the run's result, or rejects with ProcessDied, or with Withdrawn when
   * withdraw() took it back before it started. `timeoutMs`: the run's own limit. `slot`: its
   * admission slot, whose runs the process runs one after another; `ahead` of them may run first.
   */
  async run(r: RunRequest, timeoutMs: number, slot: { slot: number; ahead: number }): Promise<RunResult> {
    this.#starting++;
    this.#busy();
    let ready: boolean;
    try {
      ready = await this.#ready;
    } finally {
      this.#starting--;
      if (this.#starting === 0 && this.#runs.size === 0) this.#idle();
    }
    if (!ready || this.#dead) throw new ProcessDied(false, false);
    const run = ++this.#nextRun;
    const sdk = r.sdk ? Object.keys(r.sdk).filter((k) => typeof r.sdk![k] === 'function') : null;
    return new Promise<RunResult>((resolve, reject) => {
      // The isolate's own deadline ends the run inside the process (and each run ahead of it in
      // its slot); silence far past it means the process itself is stuck, and only ending it
      // frees what it holds.
      const entry: Entry = { request: r, slot: slot.slot, effects: false, hostMs: 0, pendingSdk: 0, pendingSince: 0, resolve, reject, deadline: undefined as unknown as NodeJS.Timeout };
      entry.deadline = this.#watch(run, entry, (slot.ahead + 1) * timeoutMs + HUNG_GRACE_MS);
      this.#runs.set(run, entry);
      this.#busy();
      this.#send({ t: 'run', run, slot: slot.slot, tenantId: r.tenantId, cacheKey: r.cacheKey, code: r.code, req: r.req, limits: r.limits, sdk, fetch: typeof r.fetch === 'function' });
    });
  }

  /**
   * Ends the process if `run` is still in it `ms` from now. A timer that fires late means this
   * process's own event loop was held: the answer may be waiting unread, so it waits once more.
   */
  #watch(run: number, e: Entry, ms: number): NodeJS.Timeout {
    const due = performance.now() + ms;
    return setTimeout(() => {
      if (this.#runs.get(run) !== e) return;
      if (performance.now() - due > 1000) e.deadline = this.#watch(run, e, HUNG_GRACE_MS);
      else this.kill();
    }, ms);
  }

  #done(run: number, result: RunResult, stats: Stats): void {
    this.stats = stats;
    const e = this.#runs.get(run);
    if (!e) return;
    this.#runs.delete(run);
    clearTimeout(e.deadline);
    if (this.#runs.size === 0 && this.#starting === 0) this.#idle();
    e.resolve(result);
  }

  #withdrawn(run: number): void {
    const e = this.#runs.get(run);
    if (!e) return;
    this.#runs.delete(run);
    clearTimeout(e.deadline);
    if (this.#runs.size === 0 && this.#starting === 0) this.#idle();
    e.reject(new Withdrawn());
  }

  /** Takes back the runs of `slot` sent here and not yet started: each rejects with Withdrawn. */
  withdraw(slot: number): void {
    for (const e of this.#runs.values()) {
      if (e.slot === slot) {
        this.#send({ t: 'withdraw', slot });
        return;
      }
    }
  }

  #call(m: CallMessage): void {
    const e = this.#runs.get(m.run);
    if (!e) return;
    e.effects = true;
    const answer = (reply: { ok: true; json: string | undefined } | { ok: false; error: CallFailure }) => {
      // A run that ended meanwhile (its process's copy drops late replies) gets none.
      if (this.#runs.get(m.run) === e) this.#send({ t: 'reply', run: m.run, call: m.call, ...reply } as ReplyMessage);
    };
    this.#perform(e, m).then(answer, () => answer({ ok: false, error: {} }));
  }

  #send(m: ToChild): void {
    this.#outbox.push(m);
  }

  #write(m: ToChild | Batch<ToChild>): void {
    if (this.#dead || !this.#child.connected) return;
    try {
      this.#child.send(m);
    } catch {
      // The channel closed under us: the exit handler settles the runs.
      this.kill();
    }
  }

  // An idle process must not keep the API process alive; one with runs in flight must.
  #busy(): void {
    (this.#child.channel as { ref?: () => void } | undefined)?.ref?.();
  }

  #idle(): void {
    (this.#child.channel as { unref?: () => void } | undefined)?.unref?.();
  }

  /** Ends the process at once; its runs in flight reject with ProcessDied. */
  kill(): void {
    if (!this.#dead) this.#child.kill('SIGKILL');
  }

  /**
   * Lets the process go: at once (`now`: its runs end with ProcessDied), or once it has
   * nothing to do, ending it after `waitMs` regardless. Resolves when it has exited, or after
   * `waitMs` at the latest.
   */
  async close(waitMs: number, now = false): Promise<void> {
    this.#closing = true;
    if (this.#dead) return;
    const exited = new Promise<void>((resolve) => (this.#exited = resolve));
    if (now) this.kill();
    else if (this.#child.connected) this.#child.disconnect();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      exited,
      new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          this.kill();
          resolve();
        }, waitMs);
      }),
    ]);
    clearTimeout(timer);
  }
}
