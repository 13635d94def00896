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

/** The key of a run's random stream: 8 random 32-bit words. */
function seedWords(): number[] {
  const bytes = randomBytesPooled(32);
  return Array.from({ length: 8 }, (_, i) => bytes.readUInt32LE(4 * i));
}
