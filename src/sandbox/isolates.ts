/**
 * The engine that runs user code (reactors, proxy transforms) inside one process. Each run
 * executes CommonJS code `module.exports = async function (req) { … }` in a V8 isolate of its
 * own (isolated-vm): nothing of the process is reachable from it, and everything it asks of
 * the host (fetch, SDK methods, crypto) crosses as copied JSON. See docs/reactors.md.
 *
 * Coffer runs this engine in sandbox processes (./process/child.ts), never in the API process:
 * an isolate that V8 cannot contain (a fatal out-of-memory) ends only its sandbox process
 * (./index.ts). The SdkHost and FetchBridge a run gets there forward to the API process.
 */
import ivm from 'isolated-vm';
import { discardPrepared, prepare, releaseQuietly, type Prepared } from './contexts.ts';
import { execute } from './execute.ts';
import { failure, runtimeFailure, syntaxFailure } from './failures.ts';
import { Inflight } from './inflight.ts';
import { byteLength } from './host-calls.ts';
import { createWarmIsolate, disposeWarmIsolate, IsolatePool, type WarmIsolate } from './pool.ts';
import { closesWrapper, closesWrapperSync, USER_FILENAME, WRAPPER_HEAD, wrapUserCode } from './runtime.ts';
import type { RunObserver, RunRequest, RunResult, SandboxFailure, SandboxLimits } from './types.ts';

export const DEFAULT_LIMITS: SandboxLimits = Object.freeze({
  memoryMb: 128,
  timeoutMs: 30_000,
  maxCodeChars: 50_000,
  maxIoBytes: 1_048_576,
  maxConsoleLines: 200,
});

export const DEFAULT_MAX_WARM_ISOLATES = 50;
/** What idle warm isolates may hold together, by their last measurement (./pool.ts). */
export const DEFAULT_MAX_WARM_BYTES = 512 * 1024 * 1024;

/**
 * A configuration (`req.configuration`) is the owner's, fixed when the reactor or proxy is
 * written, and bounded there, in UTF-8 bytes of JSON: the run's input limit (`maxIoBytes`)
 * then applies to what callers send, so no configuration can make every run too large.
 */
export const MAX_CONFIGURATION_BYTES = 256 * 1024;

/** The message for a configuration over MAX_CONFIGURATION_BYTES, or undefined. */
export function configurationTooLarge(configuration: Record<string, string> | null | undefined): string | undefined {
  if (!configuration) return undefined;
  return Buffer.byteLength(JSON.stringify(configuration), 'utf8') > MAX_CONFIGURATION_BYTES
    ? `must be at most ${MAX_CONFIGURATION_BYTES} bytes as JSON (UTF-8)`
    : undefined;
}

/** Positive finite numbers win; anything else falls back to `base`. Memory is at least 8 MB (V8's floor). */
function mergeLimits(base: SandboxLimits, over: Partial<SandboxLimits> | undefined): SandboxLimits {
  const out = { ...base };
  if (over) {
    for (const k of Object.keys(base) as (keyof SandboxLimits)[]) {
      const v = over[k];
      if (typeof v === 'number' && Number.isFinite(v) && v > 0) out[k] = Math.floor(v);
    }
  }
  out.memoryMb = Math.max(8, out.memoryMb);
  out.timeoutMs = Math.min(out.timeoutMs, 2_147_483_647); // a longer setTimeout would fire at once
  return out;
}

function codeTooLong(code: string, max: number): SandboxFailure | undefined {
  return code.length > max ? failure(400, 'invalid_code', `The code is ${code.length} characters long; the limit is ${max}.`) : undefined;
}

function lineCount(code: string): number {
  let n = 1;
  for (let i = code.indexOf('\n'); i >= 0; i = code.indexOf('\n', i + 1)) n++;
  return n;
}

function compileFailure(err: unknown, code: string): SandboxFailure {
  if (err instanceof Error && err.name === 'SyntaxError') return syntaxFailure(err.message, WRAPPER_HEAD.length, lineCount(code));
  return runtimeFailure();
}

function newChecker(): { isolate: ivm.Isolate; context: ivm.Context } {
  const isolate = new ivm.Isolate({ memoryLimit: 32 });
  try {
    return { isolate, context: isolate.createContextSync() };
  } catch (err) {
    isolate.dispose();
    throw err;
  }
}

/**
 * Compiles the user's code into `w`'s script, or says why it cannot run: a syntax error, or a
 * wrapper it closes (code stored before that check existed still meets it at its first run).
 */
async function compile(w: WarmIsolate, context: ivm.Context, code: string): Promise<SandboxFailure | undefined> {
  let script: ivm.Script | undefined;
  try {
    script = await w.isolate.compileScript(wrapUserCode(code), { filename: USER_FILENAME });
    const closes = await closesWrapper(context, code);
    if (closes !== undefined) return failure(400, 'invalid_code', closes);
    w.script = script;
    w.code = code;
    script = undefined;
    return undefined;
  } catch (err) {
    return compileFailure(err, code);
  } finally {
    if (script) releaseQuietly(script);
  }
}

export class IsolateSandbox {
  readonly #limits: SandboxLimits;
  readonly #pool: IsolatePool;
  readonly #busy = new Set<WarmIsolate>();
  readonly #observer: RunObserver | undefined;
  /** A small isolate that only ever compiles, with a context for the wrapper check: no tenant's code runs in it. */
  #checker: { isolate: ivm.Isolate; context: ivm.Context } | undefined;
  #disposed = false;
  /** Runs and context preparations under way: dispose waits for them (bounded) to settle. */
  readonly #inflight = new Inflight();

  constructor(opts: { maxWarmIsolates?: number; maxWarmBytes?: number; limits?: Partial<SandboxLimits>; onRun?: RunObserver } = {}) {
    this.#limits = mergeLimits(DEFAULT_LIMITS, opts.limits);
    this.#observer = opts.onRun;
    const max = opts.maxWarmIsolates;
    const bytes = opts.maxWarmBytes;
    this.#pool = new IsolatePool(
      typeof max === 'number' && Number.isFinite(max) && max >= 0 ? Math.floor(max) : DEFAULT_MAX_WARM_ISOLATES,
      typeof bytes === 'number' && bytes >= 0 ? bytes : DEFAULT_MAX_WARM_BYTES,
    );
  }

  /** Idle isolates kept warm right now (for tests and metrics). */
  get warmIsolates(): number {
    return this.#pool.size;
  }

  /** What the idle warm isolates held together when last measured, in bytes (for tests). */
  get warmBytes(): number {
    return this.#pool.bytes;
  }

  /** Compile-check only (no code runs), for write-time validation: syntax and length. */
  check(code: string): SandboxFailure | undefined {
    if (typeof code !== 'string') return failure(400, 'invalid_code', 'The code must be a string.');
    const tooLong = codeTooLong(code, this.#limits.maxCodeChars);
    if (tooLong) return tooLong;
    let f = this.#compileCheck(code);
    if (f?.kind === 'runtime') f = this.#compileCheck(code); // once more, in a new checker isolate
    return f;
  }

  #compileCheck(code: string): SandboxFailure | undefined {
    try {
      this.#checker ??= newChecker();
      this.#checker.isolate.compileScriptSync(wrapUserCode(code), { filename: USER_FILENAME }).release();
      const closes = closesWrapperSync(this.#checker.context, code);
      return closes === undefined ? undefined : failure(400, 'invalid_code', closes);
    } catch (err) {
      const f = compileFailure(err, code);
      if (f.kind === 'runtime') this.#disposeChecker();
      return f;
    }
  }

  #disposeChecker(): void {
    try {
      this.#checker?.isolate.dispose();
    } catch {
      // already gone
    }
    this.#checker = undefined;
  }

  /** Runs the code once. Never throws: whatever the code does comes back as `ok: false`. */
  async run(r: RunRequest): Promise<RunResult> {
    const result = await this.#inflight.track(this.#timedRun(r));
    if (this.#observer) {
      try {
        this.#observer(r, result);
      } catch {
        // Counting a run must never change its outcome.
      }
    }
    return result;
  }

  async #timedRun(r: RunRequest): Promise<RunResult> {
    const started = performance.now();
    const elapsed = () => Math.round((performance.now() - started) * 1000) / 1000;
    try {
      const outcome = await this.#run(r);
      return outcome.result.ok
        ? { ok: true, value: outcome.result.value, console: outcome.console, durationMs: elapsed() }
        : { ok: false, error: outcome.result.error, console: outcome.console, durationMs: elapsed() };
    } catch {
      return { ok: false, error: runtimeFailure(), console: [], durationMs: elapsed() };
    }
  }

  async #run(r: RunRequest): Promise<{ result: { ok: true; value: unknown } | { ok: false; error: SandboxFailure }; console: string[] }> {
    const fail = (error: SandboxFailure) => ({ result: { ok: false as const, error }, console: [] });
    if (this.#disposed) return fail(runtimeFailure('The sandbox has been shut down.'));
    if (typeof r.tenantId !== 'string' || r.tenantId === '' || typeof r.cacheKey !== 'string' || r.cacheKey === '') {
      return fail(runtimeFailure('A run needs a tenantId and a cacheKey.'));
    }
    if (typeof r.code !== 'string') return fail(failure(400, 'invalid_code', 'The code must be a string.'));
    const limits = mergeLimits(this.#limits, r.limits);
    const tooLong = codeTooLong(r.code, limits.maxCodeChars);
    if (tooLong) return fail(tooLong);

    let reqJson: string | undefined;
    try {
      reqJson = JSON.stringify(r.req ?? {});
    } catch {
      return fail(runtimeFailure('The request for the code is not plain JSON data.'));
    }
    if (reqJson === undefined) reqJson = '{}';
    // The configuration does not count: it is bounded where it is written (MAX_CONFIGURATION_BYTES).
    const configuration = r.req?.configuration;
    const configurationBytes = configuration === undefined ? 0 : byteLength(JSON.stringify(configuration));
    if (byteLength(reqJson) - configurationBytes > limits.maxIoBytes) {
      return fail(failure(413, 'too_large', `The arguments are larger than ${limits.maxIoBytes} bytes as JSON.`));
    }

    // The tenant is part of the key, so an isolate never serves two tenants.
    const key = JSON.stringify([r.tenantId, r.cacheKey, limits.memoryMb]);
    let w = this.#pool.take(key);
    if (w && w.code !== undefined && w.code !== r.code) {
      // Other code under the same key (a proxy's transform changed within the same millisecond,
      // say): a fresh isolate, so nothing the old module made (its state, Intl objects only a
      // full collection would free, see runtime/intl.js) meets the new code.
      disposeWarmIsolate(w);
      w = undefined;
    }
    w ??= await createWarmIsolate(key, r.tenantId, limits.memoryMb);
    if (w.tenantId !== r.tenantId) throw new Error('tenant mismatch in the isolate pool');
    this.#busy.add(w);
    let healthy = false;
    let heldBytes: number | undefined;
    // The context this run uses; after it, the caller's to keep (reusable) or already discarded.
    let p: Prepared | undefined;
    try {
      const ready = w.ready;
      w.ready = undefined;
      p = ready ? await ready : undefined;
      if (!w.script) {
        // The wrapper check parses the code in the context the run will use: nothing has run in it yet.
        p ??= await prepare(w);
        const f = await compile(w, p.context, r.code);
        if (f) {
          healthy = f.kind !== 'runtime';
          return fail(f);
        }
      }
      let run = p ?? (await prepare(w));
      p = undefined; // execute() owns it now
      const input = { reqJson, limits, sdk: r.sdk, fetch: r.fetch };
      let outcome = await execute(w, run, input);
      if (outcome.retry) {
        // The kept context could not be reset (code had tampered with the runtime), and nothing
        // of this run executed in it: the run starts over in a fresh context.
        run = await prepare(w);
        outcome = await execute(w, run, input);
      }
      healthy = outcome.healthy;
      heldBytes = outcome.heldBytes;
      if (outcome.reusable) p = run;
      return outcome;
    } finally {
      this.#busy.delete(w);
      if (healthy && !this.#disposed && !w.isolate.isDisposed) {
        // The next run's context: this run's (it keeps the loaded module; the next arm resets it),
        // an unused fresh one when compiling failed, or else a fresh one made now, while the
        // isolate would be idle anyway.
        const kept = p;
        w.ready = kept ? Promise.resolve(kept) : this.#inflight.track(prepare(w).catch(() => undefined));
        if (heldBytes !== undefined) this.#pool.measured(w, heldBytes);
        this.#pool.put(w);
      } else {
        if (p) discardPrepared(p);
        disposeWarmIsolate(w);
      }
    }
  }

  /**
   * Disposes every isolate, running ones included (their runs end with a runtime failure), then
   * waits up to `waitMs` for the runs and context preparations under way to settle: isolate work
   * still queued when the process exits can abort it (isolated-vm tears down its threads then).
   */
  async dispose(waitMs = 2000): Promise<void> {
    this.#disposed = true;
    this.#pool.clear();
    for (const w of this.#busy) {
      w.stop?.(runtimeFailure('The sandbox has been shut down.'));
      disposeWarmIsolate(w);
    }
    this.#busy.clear();
    this.#disposeChecker();
    await this.#inflight.settle(waitMs);
  }
}
