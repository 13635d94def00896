/**
 * One run of user code in a warm isolate, seen from the host.
 *
 * A context (prepare) has the runtime installed in it, made while the isolate waited in the
 * pool. The first run in it arms it with the request and starts the user script, which loads
 * the module and calls the exported function. The context, with the loaded module, then serves
 * the later runs of the same code (Lambda-style warm semantics, docs/reactors.md): each later
 * run's arm first resets it (the runtime's globals put back, the finished run forgotten), in the
 * same task, then calls the kept function; a context that cannot be reset is replaced by a fresh
 * one before anything of the run executes (Outcome.retry). Only a run that ended cleanly leaves
 * its context for the next one (Outcome.reusable); any other is dropped, and the next run gets
 * a fresh context, or, when the isolate itself may be unsafe, a fresh isolate.
 *
 * From the start of a run the isolate and the host only exchange copied strings: the isolate
 * sends messages through `port` (log, call, timer, clear, done), each marked with the number of
 * the run it belongs to, and the host answers by applying `control` (arm, settle, timer, poll)
 * — each application is a "task" on the isolate's thread. A message marked with another
 * run's number is dropped, so nothing of a finished run reaches the next run's host functions.
 *
 * The run is over when the function has settled (the isolate said "done") and no task is
 * still executing, so the isolate is idle when it goes back to the pool. Calls and timers
 * still pending then are dropped. The wall-time deadline is enforced here, by the host:
 * V8's own timeout only covers a task while it executes, and code resuming after an await
 * runs in a later task, so at the deadline the host disposes the whole isolate.
 */
import ivm from 'isolated-vm';
import { randomBytesPooled } from '../random.ts';
import { failure, memoryFailure, runtimeFailure, stuckFailure, timeoutFailure } from './failures.ts';
import { byteLength, parseUntrusted, performCall, TooDeepError, type CallContext } from './host-calls.ts';
import { TimerQueue } from './timer-queue.ts';
import type { WarmIsolate } from './pool.ts';
import type { FetchBridge, SandboxFailure, SandboxLimits, SdkHost } from './types.ts';

/**
 * Fixed per-run bounds on what user code may ask of the host: fetch / SDK / crypto calls
 * unfinished at once and in all, timers pending at once and in all. Each keeps a loop in user
 * code from flooding the host's event loop with messages.
 */
export const MAX_PENDING_CALLS = 50;
export const MAX_CALLS_PER_RUN = 5_000;
export const MAX_TIMERS = 100;
export const MAX_TIMERS_PER_RUN = 10_000;
const MAX_LOG_LINE = 8193;

export type Outcome = {
  result: { ok: true; value: unknown } | { ok: false; error: SandboxFailure };
  console: string[];
  /** false: the isolate must be disposed (timed out, out of memory, or in an unknown state). */
  healthy: boolean;
  /**
   * true: the run ended cleanly (the function settled and said so, the module is loaded, no
   * task failed, nothing was left pending), and its context may serve the next run of the same
   * code once reset. false: the context has been discarded.
   */
  reusable: boolean;
  /** The context could not be reset for this run, so nothing of it ran: run it again in a fresh context. */
  retry?: true;
  /** What the isolate held when the run ended (see measureIfDue), when it was measured. */
  heldBytes?: number;
};

/**
 * The first `n` code units of `s`, as a string of its own: V8's slice of a long string keeps the
 * whole string alive, and what the isolate sent may be far longer than what the run keeps.
 */
function cutCopy(s: string, n: number): string {
  return s.length > n ? Buffer.from(s.slice(0, n), 'utf16le').toString('utf16le') : s;
}

type Settled = { ok: true; valueJson: string | undefined } | { ok: false; error: SandboxFailure };

/** Statuses user code may end a run with (besides those the host itself handed to it). */
const USER_STATUSES = new Set([400, 401, 403, 404, 422, 429]);
const KINDS = new Set(['user_error', 'invalid_code', 'too_large', 'memory', 'runtime']);

type Port = { run: Run | undefined };

class Run {
  readonly console: string[] = [];
  /** This run's number in its context: messages marked with another number are not for it. */
  readonly no: number;
  readonly #w: WarmIsolate;
  readonly #limits: SandboxLimits;
  readonly #calls: CallContext;
  #deadlineAt = 0;
  #deadline: NodeJS.Timeout | undefined;
  readonly #timers = new TimerQueue((id) => this.#deliver('timer', id));
  /** Statuses of host errors handed to user code: a run may end with one of them. */
  readonly #handedStatuses = new Set<number>();
  #control: ivm.Reference | undefined;
  #inflight = 0;
  #pendingCalls = 0;
  #totalCalls = 0;
  #totalTimers = 0;
  #settled: Settled | undefined;
  /** The outcome came from the isolate's own report ("done"), which also said the module is loaded. */
  #reported = false;
  #loaded = false;
  /** A task failed (an uncaught exception, a timeout, a dead isolate). */
  #taskError = false;
  /** The code asked for a call or a timer after its function settled. */
  #lateWork = false;
  #reusable = false;
  #finished = false;
  /** ICU memory (KB) the context's Intl objects held when the function settled, as the runtime reported it. */
  intlKb = 0;
  #resolve!: (o: Outcome) => void;
  readonly done: Promise<Outcome>;

  constructor(w: WarmIsolate, no: number, limits: SandboxLimits, calls: CallContext) {
    this.#w = w;
    this.no = no;
    this.#limits = limits;
    this.#calls = calls;
    this.done = new Promise((resolve) => (this.#resolve = resolve));
  }

  /**
   * Arms the context with the request and, when the module is loaded in it already, calls its
   * function (one task); otherwise arms it, then starts the user script, which loads the module
   * and calls the function. The wall-time limit counts from here. Tasks are queued at once: an
   * isolate runs its tasks in order.
   */
  start(p: Prepared, script: ivm.Script, armJson: string, reqJson: string): void {
    const ms = this.#limits.timeoutMs;
    this.#deadlineAt = performance.now() + ms;
    this.#deadline = setTimeout(() => this.#fatal(timeoutFailure(ms)), ms);
    this.#control = p.control;
    this.#track(
      p.control.apply(undefined, ['arm', armJson, reqJson, this.no, p.loaded] as never[], { timeout: this.#remaining() }),
      (state) => state === 'tainted' && this.#untouched(),
    );
    // copy: the script's value is undefined unless code escaped the wrapper; never let it
    // come out as a function (a handle into the context), only as copied data or an error.
    if (!p.loaded) this.#track(script.run(p.context, { timeout: this.#remaining(), copy: true }));
  }

  #remaining(): number {
    return Math.max(1, Math.ceil(this.#deadlineAt - performance.now()));
  }

  // ---- messages from the isolate (arguments are copies, of any type: check them) -----------

  onMessage(op: unknown, a: unknown, b: unknown, c: unknown): void {
    if (this.#finished) return;
    switch (op) {
      case 'log':
        if (typeof a === 'string' && this.console.length <= this.#limits.maxConsoleLines) {
          this.console.push(a.length > MAX_LOG_LINE ? cutCopy(a, MAX_LOG_LINE) : a);
        }
        return;
      // Once the function has settled, the run's outcome is decided: work it asks for
      // afterwards (an SDK call with side effects, say) is not started.
      case 'call':
        if (this.#settled) this.#lateWork = true;
        else if (typeof a === 'number' && typeof b === 'string' && typeof c === 'string') this.#call(a, b, c);
        return;
      case 'timer':
        if (this.#settled) this.#lateWork = true;
        else if (typeof a === 'number' && typeof b === 'number') this.#timer(a, b, c);
        return;
      case 'clear':
        if (typeof a === 'number') this.#clear(a);
        return;
      case 'done':
        if (typeof a === 'string' && (typeof b === 'string' || b === undefined)) this.#done(a, b);
        return;
    }
  }

  #call(id: number, kind: string, payload: string): void {
    if (this.#pendingCalls >= MAX_PENDING_CALLS || this.#totalCalls >= MAX_CALLS_PER_RUN) {
      this.#deliver('settle', id, false, JSON.stringify({ status: 429, message: 'Too many calls.' }));
      return;
    }
    this.#pendingCalls++;
    this.#totalCalls++;
    performCall(kind, payload, this.#calls).then(
      (o) => {
        this.#pendingCalls--;
        if (!o.ok && o.json) this.#noteStatus(o.json);
        this.#deliver('settle', id, o.ok, o.json);
      },
      () => {
        this.#pendingCalls--;
        this.#deliver('settle', id, false, JSON.stringify({ status: 500, message: 'The operation failed.' }));
      },
    );
  }

  #noteStatus(json: string): void {
    try {
      const status = (JSON.parse(json) as { status?: unknown }).status;
      if (typeof status === 'number') this.#handedStatuses.add(status);
    } catch {
      // not JSON: nothing handed over
    }
  }

  /**
   * Arms timer `id` (again, for an interval: each firing counts against the per-run total), due
   * `ms` after `setAt`, when user code set it (the isolate's Date.now(), this process's clock;
   * a value that is no such time counts from now). Node's floor of 1 ms applies.
   */
  #timer(id: number, ms: number, setAt: unknown): void {
    if (this.#timers.has(id) || this.#timers.size >= MAX_TIMERS || this.#totalTimers >= MAX_TIMERS_PER_RUN) return;
    this.#totalTimers++;
    const now = Date.now();
    const from = typeof setAt === 'number' && setAt <= now && setAt > now - 60_000 ? setAt : now;
    // Never shortened to the deadline: a timer must not fire before its time. All are
    // cleared when the run ends.
    this.#timers.set(id, from + Math.min(Math.max(1, ms), 2_147_483_647));
  }

  #clear(id: number): void {
    if (!this.#timers.delete(id)) return;
    this.#maybeOver();
  }

  #done(metaJson: string, valueJson: string | undefined): void {
    if (this.#settled) return;
    this.#reported = true;
    let meta: Record<string, unknown>;
    try {
      meta = parseUntrusted(metaJson) as Record<string, unknown>;
      if (meta === null || typeof meta !== 'object') throw new Error('not an object');
    } catch {
      this.#reported = false;
      this.#settled = { ok: false, error: failure(422, 'user_error', 'The code ended in an unreadable state.') };
      this.#maybeOver();
      return;
    }
    this.#loaded = meta.loaded === true;
    if (typeof meta.intlKb === 'number' && meta.intlKb >= 0) this.intlKb = meta.intlKb;
    if (meta.ok === true) {
      if (valueJson !== undefined && byteLength(valueJson) > this.#limits.maxIoBytes) {
        this.#settled = { ok: false, error: failure(422, 'too_large', `The returned value is larger than ${this.#limits.maxIoBytes} bytes as JSON.`) };
      } else {
        this.#settled = { ok: true, valueJson };
      }
    } else {
      this.#settled = { ok: false, error: this.#userFailure(meta) };
    }
    this.#maybeOver();
  }

  /** The failure user code reported, trusting no field of it. */
  #userFailure(meta: Record<string, unknown>): SandboxFailure {
    let kind = typeof meta.kind === 'string' && KINDS.has(meta.kind) ? (meta.kind as SandboxFailure['kind']) : 'user_error';
    let status = typeof meta.status === 'number' ? meta.status : 422;
    if (kind === 'invalid_code') status = 400;
    else if (kind === 'too_large' || kind === 'memory') status = 422;
    else if (!USER_STATUSES.has(status) && !this.#handedStatuses.has(status)) status = 422;
    if (kind === 'runtime' && status < 500) kind = 'user_error';
    if (status >= 500) kind = 'runtime';
    const message = typeof meta.message === 'string' && meta.message !== '' ? meta.message.slice(0, 2001) : 'The code threw an error.';
    let data: unknown;
    if (typeof meta.data === 'string' && byteLength(meta.data) <= this.#limits.maxIoBytes) {
      try {
        data = parseUntrusted(meta.data);
      } catch {
        // unreadable or too deep for the host's error handler: the error goes without it
        data = undefined;
      }
    }
    return failure(status, kind, message, data);
  }

  // ---- tasks on the isolate ------------------------------------------------------------------

  #deliver(command: string, ...args: unknown[]): void {
    if (this.#finished || this.#settled || !this.#control) return;
    this.#track(this.#control.apply(undefined, [command, ...args] as never[], { timeout: this.#remaining() }));
  }

  /** `onValue` sees what the task returned, before the run checks whether it is over. */
  #track(task: Promise<unknown>, onValue?: (value: unknown) => void): void {
    this.#inflight++;
    task.then(
      (value) => {
        this.#inflight--;
        onValue?.(value);
        this.#maybeOver();
      },
      (err) => {
        this.#inflight--;
        this.#taskFailed(err);
        this.#maybeOver();
      },
    );
  }

  #taskFailed(err: unknown): void {
    if (this.#finished) return;
    this.#taskError = true;
    const message = err instanceof Error ? err.message : String(err);
    if (this.#w.isolate.isDisposed || /^Isolate was disposed|^Isolate is disposed/.test(message)) {
      this.#fatal(/memory limit/.test(message) ? memoryFailure(this.#w.memoryMb) : runtimeFailure());
    } else if (message === 'Script execution timed out.') {
      this.#fatal(timeoutFailure(this.#limits.timeoutMs));
    } else if (!this.#settled) {
      // An exception nothing caught: a rejection left unhandled when a task ended, or code
      // that escaped the function wrapper. Node would crash; the run fails.
      const name = err instanceof Error && err.name !== 'Error' ? err.name : '';
      const detail = name && message ? `${name}: ${message}` : name || message || 'The code threw an error.';
      this.#settled = { ok: false, error: failure(422, 'user_error', cutCopy(detail, 2001)) };
    }
  }

  #maybeOver(): void {
    if (this.#finished || this.#inflight > 0) return;
    if (this.#settled) {
      this.#finish(this.#settled, this.#settled.ok || this.#settled.error.kind !== 'memory');
      return;
    }
    if (this.#pendingCalls === 0 && this.#timers.size === 0) this.#poll();
  }

  /**
   * Nothing is executing, nothing is pending on the host, and the function has not settled:
   * unless a message is still on its way, it never will. Ask the isolate, which knows.
   */
  #poll(): void {
    if (!this.#control) return;
    this.#inflight++;
    this.#control.apply(undefined, ['poll'] as never[], { timeout: this.#remaining() }).then(
      (json: unknown) => {
        this.#inflight--;
        if (this.#finished) return;
        let state: { finished?: unknown; pending?: unknown } = {};
        try {
          state = JSON.parse(String(json));
        } catch {
          // treated as stuck below
        }
        const quiet = this.#inflight === 0 && this.#pendingCalls === 0 && this.#timers.size === 0;
        if (this.#settled) this.#maybeOver();
        else if (quiet && state.finished !== true && state.pending === 0) this.#fatal(stuckFailure(), true);
        // otherwise a message is in flight; its arrival moves the run on
      },
      (err) => {
        this.#inflight--;
        this.#taskFailed(err);
        this.#maybeOver();
      },
    );
  }

  /** Ends the run now; the isolate is disposed unless `healthy`. */
  #fatal(error: SandboxFailure, healthy = false): void {
    if (this.#finished) return;
    this.#finish({ ok: false, error }, healthy);
    if (!healthy) {
      try {
        this.#w.isolate.dispose();
      } catch {
        // already disposed
      }
    }
  }

  #finish(settled: Settled, healthy: boolean): void {
    if (this.#finished) return;
    this.#finished = true;
    // Anything left pending (a timer, a call, work asked for after the function settled) means
    // the context holds unfinished work of this run: it is not handed to the next one.
    this.#reusable = healthy && this.#reported && this.#loaded && !this.#taskError && !this.#lateWork && this.#timers.size === 0 && this.#pendingCalls === 0;
    clearTimeout(this.#deadline);
    this.#timers.clear();
    let result: Outcome['result'];
    if (settled.ok) {
      try {
        result = { ok: true, value: settled.valueJson === undefined ? undefined : parseUntrusted(settled.valueJson) };
      } catch (err) {
        result = {
          ok: false,
          error: err instanceof TooDeepError ? failure(422, 'too_large', `The returned value ${err.message}.`) : failure(422, 'user_error', 'The returned value is not valid JSON.'),
        };
      }
    } else {
      result = settled;
    }
    this.#resolve({ result, console: this.console, healthy, reusable: this.#reusable });
  }

  /** The context refused the arm (its globals could not be put back): the run ends before it began. */
  #untouched(): void {
    if (this.#finished) return;
    this.#finished = true;
    clearTimeout(this.#deadline);
    this.#resolve({ result: { ok: false, error: runtimeFailure() }, console: [], healthy: true, reusable: false, retry: true });
  }

  /** Gives up a run that could not start. */
  abandon(): void {
    this.#finished = true;
    clearTimeout(this.#deadline);
  }

  /** Ends the run now with `error`, disposing its isolate: nothing else would (a host timer it awaits, say). */
  stop(error: SandboxFailure): void {
    this.#fatal(error);
  }

  release(): void {
    this.#control = undefined;
  }
}

export type ExecuteInput = {
  reqJson: string;
  limits: SandboxLimits;
  sdk?: SdkHost;
  fetch?: FetchBridge;
};

/**
 * A context with the runtime installed, made while the isolate waits in the pool. `loaded`: the
 * user's module is loaded in it (a run of the isolate's current code ended cleanly in it), so
 * the next run only calls its function, after resetting what the last run left. `runs` numbers
 * the runs made in it.
 */
export type Prepared = { context: ivm.Context; control: ivm.Reference; port: Port; loaded: boolean; runs: number };

/**
 * Makes the context for the next run, asynchronously: the work happens on an isolate thread,
 * off the host's event loop, and usually while the isolate is idle between runs.
 */
export async function prepare(w: WarmIsolate): Promise<Prepared> {
  const context = await w.isolate.createContext();
  try {
    const port: Port = { run: undefined };
    const callback = new ivm.Callback(
      (no: unknown, op: unknown, a: unknown, b: unknown, c: unknown) => {
        const run = port.run;
        // Only the current run's messages: one sent for a run that is over is dropped.
        if (run !== undefined && no === run.no) run.onMessage(op, a, b, c);
      },
      { ignored: true },
    );
    // Queued in order on the isolate's thread: the global is set before the runtime reads it.
    context.global.setIgnored('__coffer_port', callback);
    const control = (await w.runtime.run(context, { reference: true })) as ivm.Reference;
    return { context, control, port, loaded: false, runs: 0 };
  } catch (err) {
    releaseQuietly(context);
    throw err;
  }
}

/** The key of a run's random stream: 8 random 32-bit words. */
function seedWords(): number[] {
  const bytes = randomBytesPooled(32);
  return Array.from({ length: 8 }, (_, i) => bytes.readUInt32LE(4 * i));
}

export function discardPrepared(p: Prepared): void {
  p.port.run = undefined;
  releaseQuietly(p.control);
  releaseQuietly(p.context);
}

function releaseQuietly(handle: { release(): void }): void {
  try {
    handle.release();
  } catch {
    // gone with the isolate
  }
}

/**
 * One run of the compiled user script of `w` in the context `p`. Never throws. When the outcome
 * is reusable, `p` (now with the module loaded) is the caller's again, to reset and keep;
 * otherwise `p` has been discarded.
 */
export async function execute(w: WarmIsolate, p: Prepared, input: ExecuteInput): Promise<Outcome> {
  const { limits } = input;
  const sdkMethods = input.sdk ? Object.keys(input.sdk).filter((k) => typeof input.sdk![k] === 'function') : null;
  const arm = JSON.stringify({
    limits: {
      maxIoBytes: limits.maxIoBytes,
      maxConsoleLines: limits.maxConsoleLines,
      maxTimers: MAX_TIMERS,
      maxTimersPerRun: MAX_TIMERS_PER_RUN,
      maxPendingCalls: MAX_PENDING_CALLS,
      maxCallsPerRun: MAX_CALLS_PER_RUN,
      maxIntlKb: intlBudgetKb(w.memoryMb),
    },
    sdk: sdkMethods,
    // The key of the run's random stream: 8 words, so the isolate needs no decoding to use them.
    seed: seedWords(),
  });
  const run = new Run(w, ++p.runs, limits, { sdk: input.sdk, fetch: input.fetch, maxIoBytes: limits.maxIoBytes });
  p.port.run = run;
  try {
    // Never a synchronous call into the isolate here: it would block the event loop for as
    // long as the isolate takes to let go, a garbage collection of its old contexts included.
    run.start(p, w.script!, arm, input.reqJson);
  } catch {
    run.abandon();
    discardPrepared(p);
    return { result: { ok: false, error: w.isolate.isDisposed ? memoryFailure(w.memoryMb) : runtimeFailure() }, console: [], healthy: false, reusable: false };
  }
  w.stop = (error) => run.stop(error);
  const outcome = await run.done;
  // Now, before anything else is queued on the isolate: nothing runs in it, so the measurement
  // takes microseconds and cannot hold the event loop.
  if (outcome.healthy && !w.isolate.isDisposed) outcome.heldBytes = measureIfDue(w, !outcome.reusable, run.intlKb);
  w.stop = undefined;
  run.release();
  p.port.run = undefined;
  if (outcome.reusable) {
    // Intl objects count until V8's full collection frees them, which code that allocates
    // little may never bring about: an isolate whose context holds much goes, rather than
    // its code meeting the runtime's limit after a thousand calls that each made one formatter.
    if (run.intlKb > recycleIntlKb(w.memoryMb)) {
      discardPrepared(p);
      return { ...outcome, healthy: false, reusable: false };
    }
    p.loaded = true;
    return outcome;
  }
  if (outcome.healthy && !(await discardCountingIntl(w, p))) return { ...outcome, healthy: false };
  discardPrepared(p);
  return outcome;
}

/**
 * A warm isolate is measured every this many runs (and after its first, and whenever its
 * context is replaced): the measurement is cheap, but a warm run otherwise needs none.
 */
const MEASURE_EVERY = 8;

/**
 * What `w` holds of the host's memory, for the warm isolates' budget (./pool.ts): its heap, its
 * external memory (array buffers) and its Intl objects' ICU memory (`intlKb`, the runtime's
 * estimate); undefined when no measurement is due. Synchronous: only for an idle isolate.
 */
function measureIfDue(w: WarmIsolate, contextReplaced: boolean, intlKb: number): number | undefined {
  if (!contextReplaced && w.heldBytes > 0 && ++w.unmeasuredRuns < MEASURE_EVERY) return undefined;
  w.unmeasuredRuns = 0;
  try {
    const s = w.isolate.getHeapStatisticsSync();
    return s.total_physical_size + s.externally_allocated_size + intlKb * 1024;
  } catch {
    return undefined;
  }
}

/** The least ICU memory a context may hold: the locale methods' cache alone may take 2 MB (64 DateTimeFormats). */
const MIN_INTL_KB = 8 * 1024;

/**
 * ICU memory (KB, the runtime's estimate, see runtime/intl.js) the Intl objects of one context
 * may hold at once: half the isolate's memory limit (64 MB at the default 128 MB). The limit
 * does not count that memory, so without this a 16 MB isolate could hold 64 MB of the host's
 * in formatters. At least MIN_INTL_KB, so that the smallest isolate (8 MB) can still keep the
 * cache and a couple of hundred formatters of its own.
 */
export function intlBudgetKb(memoryMb: number): number {
  return Math.max(MIN_INTL_KB, memoryMb * 512);
}

/**
 * A clean run whose context holds more than this (half the runtime's budget, so it scales with
 * it) retires its isolate: a fixed figure above a small isolate's budget would never be reached,
 * and its code would meet the runtime's RangeError instead of a fresh isolate.
 */
export function recycleIntlKb(memoryMb: number): number {
  return intlBudgetKb(memoryMb) / 2;
}

/**
 * ICU memory of Intl objects (KB, the runtime's estimate, see runtime/intl.js) in the contexts
 * an isolate discarded. The runtime bounds what one context holds; a discarded context's objects
 * are garbage, but only V8's collector frees them, when it gets to them, and a fresh context
 * starts counting from zero: runs that each filled a context and left it unusable (a timer left
 * pending) piled up 500 MB in a 32 MB isolate. Past the bound, the isolate goes instead. A
 * quarter of the runtime's budget, so that with it an isolate holds at most 1.25 times its
 * budget whatever its memory limit: a fixed 16 MB would let a 16 MB isolate keep two full
 * discarded contexts besides its live one.
 */
export function maxDiscardedIntlKb(memoryMb: number): number {
  return intlBudgetKb(memoryMb) / 4;
}

/** Discards `p`, counting what its Intl objects hold; false: the isolate must go too. */
async function discardCountingIntl(w: WarmIsolate, p: Prepared): Promise<boolean> {
  let kb: unknown;
  try {
    kb = await p.control.apply(undefined, ['intl'] as never[], { timeout: 1000 });
  } catch {
    kb = undefined;
  }
  discardPrepared(p);
  if (typeof kb !== 'number' || !(kb >= 0)) return false;
  w.discardedIntlKb += kb;
  return w.discardedIntlKb <= maxDiscardedIntlKb(w.memoryMb);
}
