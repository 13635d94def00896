/**
 * The host's side of one run (./execute.ts): what the isolate asks of the host during it, the
 * tasks the host queues on the isolate, the run's limits, and when it is over.
 *
 * From the start of a run the isolate and the host only exchange copied strings: the isolate
 * sends messages through `port` (log, call, timer, clear, done), each marked with the number of
 * the run it belongs to, and the host answers by applying `control` (arm, settle, timer, poll)
 * — each application is a "task" on the isolate's thread. A message marked with another
 * run's number is dropped, so nothing of a finished run reaches the next run's host functions.
 *
 * The run is over when the function has settled (the isolate said "done") and no task is
 * still executing, so the isolate is idle when it goes back to the pool. Calls and timers
 * still pending then are dropped. The wall-time deadline is enforced here, by the host: at
 * the deadline it disposes the whole isolate, which also ends a task still executing (code
 * resuming after an await runs in a later task, so no task's own limit could bound a run).
 * Tasks are queued without V8's per-task timeout: it would only repeat the deadline, and
 * isolated-vm sets up a timer for every task given one (a few µs each, docs/benchmarks.md).
 */
import type ivm from 'isolated-vm';
import type { Prepared } from './contexts.ts';
import { failure, memoryFailure, runtimeFailure, stuckFailure, timeoutFailure } from './failures.ts';
import { byteLength, parseUntrusted, performCall, TooDeepError, type CallContext } from './host-calls.ts';
import { TimerQueue } from './timer-queue.ts';
import type { WarmIsolate } from './pool.ts';
import type { SandboxFailure, SandboxLimits } from './types.ts';
import { userFailure } from './user-failure.ts';

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
  /** What the isolate held when the run ended (measureIfDue, ./memory-accounting.ts), when it was measured. */
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

/** One run, from its arm to its outcome (`done`); execute() starts it in a prepared context. */
export class Run {
  readonly console: string[] = [];
  /** This run's number in its context: messages marked with another number are not for it. */
  readonly no: number;
  readonly #w: WarmIsolate;
  readonly #limits: SandboxLimits;
  readonly #calls: CallContext;
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
  start(p: Prepared, script: ivm.Script, armJson: string): void {
    const ms = this.#limits.timeoutMs;
    this.#deadline = setTimeout(() => this.#fatal(timeoutFailure(ms)), ms);
    this.#control = p.control;
    this.#track(
      p.control.apply(undefined, ['arm', armJson] as never[]),
      (state) => state === 'tainted' && this.#untouched(),
    );
    // copy: the script's value is undefined unless code escaped the wrapper; never let it
    // come out as a function (a handle into the context), only as copied data or an error.
    if (!p.loaded) this.#track(script.run(p.context, { copy: true }));
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
      this.#settled = { ok: false, error: userFailure(meta, this.#handedStatuses, this.#limits.maxIoBytes) };
    }
    this.#maybeOver();
  }

  // ---- tasks on the isolate ------------------------------------------------------------------

  #deliver(command: string, ...args: unknown[]): void {
    if (this.#finished || this.#settled || !this.#control) return;
    this.#track(this.#control.apply(undefined, [command, ...args] as never[]));
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
    this.#control.apply(undefined, ['poll'] as never[]).then(
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
