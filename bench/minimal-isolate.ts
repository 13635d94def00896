/**
 * The sandbox process of the `react.minimal` baseline (bench/minimal-react.ts): holds one warm
 * isolated-vm isolate with Coffer's limits (REACTOR_MEMORY_MB's default of 128 MB, a 30 s
 * wall-time limit per call: REACTOR_TIMEOUT_MS's default) and runs the code it is sent, as
 * Coffer's sandbox processes do (src/sandbox/process/child.ts): over Node's IPC channel with
 * JSON serialisation. Like Coffer, it keeps the context with the code's module loaded for the
 * next call of the same code (the warm semantics of docs/reactors.md); what Coffer resets
 * between calls is its runtime (console, timers, fetch, crypto), of which this has none.
 */
import ivm from 'isolated-vm';
import { isolateHeapDefaults } from '../src/sandbox/process/heap-flags.ts';

export const MEMORY_MB = 128;
export const TIMEOUT_MS = 30_000;

/** A call: the code to run and its request as JSON. */
export type CallMessage = { id: number; code: string; req: string };
export type AnswerMessage = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: string };

// Forked with Coffer's sandbox flags: its isolate's heap is sized as Coffer's are.
isolateHeapDefaults();
let isolate = new ivm.Isolate({ memoryLimit: MEMORY_MB });
let loaded: { code: string; fn: ivm.Reference<(req: string) => Promise<unknown>> } | undefined;

/** The module's function, compiled and loaded once per code (and per isolate). */
function load(code: string): ivm.Reference<(req: string) => Promise<unknown>> {
  if (loaded?.code === code) return loaded.fn;
  const context = isolate.createContextSync();
  const wrapped = `(function () { const module = { exports: {} }; ${code}\n; const fn = module.exports;` +
    ` return (json) => fn(JSON.parse(json)); })()`;
  const fn = isolate.compileScriptSync(wrapped).runSync(context, { reference: true, timeout: TIMEOUT_MS }) as ivm.Reference<(req: string) => Promise<unknown>>;
  loaded = { code, fn };
  return fn;
}

async function call(m: CallMessage): Promise<AnswerMessage> {
  // V8's timeout covers only the synchronous part; code resuming after an await runs later:
  // the wall-time limit is the host's, and past it the isolate goes (as in src/sandbox/run.ts).
  const deadline = setTimeout(() => isolate.dispose(), TIMEOUT_MS);
  try {
    const value = await load(m.code).apply(undefined, [m.req], { timeout: TIMEOUT_MS, result: { promise: true, copy: true } });
    return { id: m.id, ok: true, value };
  } catch (err) {
    if (isolate.isDisposed) {
      isolate = new ivm.Isolate({ memoryLimit: MEMORY_MB });
      loaded = undefined;
    }
    return { id: m.id, ok: false, error: String((err as Error)?.message ?? err) };
  } finally {
    clearTimeout(deadline);
  }
}

if (import.meta.main) {
  process.on('message', (m: CallMessage) => void call(m).then((answer) => process.connected && process.send!(answer)));
  process.on('disconnect', () => process.exit(0));
  process.send!({ ready: true });
}
