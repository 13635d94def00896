/**
 * One run of user code in a warm isolate, seen from the host.
 *
 * A context (./contexts.ts) has the runtime installed in it, made while the isolate waited in
 * the pool. The first run in it arms it with the request and starts the user script, which loads
 * the module and calls the exported function. The context, with the loaded module, then serves
 * the later runs of the same code (Lambda-style warm semantics, docs/reactors.md): each later
 * run's arm first resets it (the runtime's globals put back, the finished run forgotten), in the
 * same task, then calls the kept function; a context that cannot be reset is replaced by a fresh
 * one before anything of the run executes (Outcome.retry). Only a run that ended cleanly leaves
 * its context for the next one (Outcome.reusable); any other is dropped, and the next run gets
 * a fresh context, or, when the isolate itself may be unsafe, a fresh isolate.
 *
 * The run itself, its messages, tasks and deadline, is ./run.ts; what the isolate holds of the
 * host's memory afterwards, ./memory-accounting.ts.
 */
import { randomBytesPooled } from '../random.ts';
import { discardPrepared, type Prepared } from './contexts.ts';
import { memoryFailure, runtimeFailure } from './failures.ts';
import { discardCountingIntl, intlBudgetKb, measureIfDue, recycleIntlKb } from './memory-accounting.ts';
import { MAX_CALLS_PER_RUN, MAX_PENDING_CALLS, MAX_TIMERS, MAX_TIMERS_PER_RUN, Run, type Outcome } from './run.ts';
import type { WarmIsolate } from './pool.ts';
import type { FetchBridge, SandboxLimits, SdkHost } from './types.ts';

export type ExecuteInput = {
  reqJson: string;
  limits: SandboxLimits;
  sdk?: SdkHost;
  fetch?: FetchBridge;
};

/**
 * One run of the compiled user script of `w` in the context `p`. Never throws. When the outcome
 * is reusable, `p` (now with the module loaded) is the caller's again, to reset and keep;
 * otherwise `p` has been discarded.
 */
export async function execute(w: WarmIsolate, p: Prepared, input: ExecuteInput): Promise<Outcome> {
  const { limits } = input;
  const run = new Run(w, ++p.runs, limits, { sdk: input.sdk, fetch: input.fetch, maxIoBytes: limits.maxIoBytes });
  const arm = armMessage(run.no, p.loaded, armSettings(w.memoryMb, limits, input.sdk), input.reqJson);
  p.port.run = run;
  try {
    // Never a synchronous call into the isolate here: it would block the event loop for as
    // long as the isolate takes to let go, a garbage collection of its old contexts included.
    run.start(p, w.script!, arm);
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
 * The arm message's JSON (runtime/main.js, arm): the run's number, whether the module is loaded
 * in the context, the settings, a new random seed, and the request's own JSON as it is.
 */
function armMessage(no: number, loaded: boolean, settings: string, reqJson: string): string {
  return `{"no":${no},"go":${loaded},${settings},"seed":${seedWords()},"req":${reqJson}}`;
}

/** The last settings made, kept: they depend only on the limits and the SDK, which runs mostly share. */
let lastSettings: { memoryMb: number; maxIoBytes: number; maxConsoleLines: number; sdk: string[] | null; json: string } | undefined;

/** The arm message's limits and SDK methods, as JSON members. */
function armSettings(memoryMb: number, limits: SandboxLimits, sdk: SdkHost | undefined): string {
  const methods = sdk ? Object.keys(sdk).filter((k) => typeof sdk[k] === 'function') : null;
  const last = lastSettings;
  if (last && last.memoryMb === memoryMb && last.maxIoBytes === limits.maxIoBytes && last.maxConsoleLines === limits.maxConsoleLines && sameList(last.sdk, methods)) {
    return last.json;
  }
  const json = JSON.stringify({
    limits: {
      maxIoBytes: limits.maxIoBytes,
      maxConsoleLines: limits.maxConsoleLines,
      maxTimers: MAX_TIMERS,
      maxTimersPerRun: MAX_TIMERS_PER_RUN,
      maxPendingCalls: MAX_PENDING_CALLS,
      maxCallsPerRun: MAX_CALLS_PER_RUN,
      maxIntlKb: intlBudgetKb(memoryMb),
    },
    sdk: methods,
  }).slice(1, -1);
  lastSettings = { memoryMb, maxIoBytes: limits.maxIoBytes, maxConsoleLines: limits.maxConsoleLines, sdk: methods, json };
  return json;
}

function sameList(a: string[] | null, b: string[] | null): boolean {
  if (a === null || b === null) return a === b;
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

/**
 * The key of a run's random stream, as a JSON array of 8 random 32-bit words (the isolate
 * needs no decoding to use them).
 */
function seedWords(): string {
  const bytes = randomBytesPooled(32);
  let out = `[${bytes.readUInt32LE(0)}`;
  for (let i = 4; i < 32; i += 4) out += `,${bytes.readUInt32LE(i)}`;
  return `${out}]`;
}
