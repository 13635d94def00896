/**
 * The contexts runs execute in (./execute.ts). Each has the runtime (./runtime.ts) installed,
 * and a port through which the isolate's messages reach the run under way in it.
 */
import ivm from 'isolated-vm';
import type { WarmIsolate } from './pool.ts';

/** Where the isolate's messages go: the run under way in the context, if any (./run.ts). */
type Port = { run: { readonly no: number; onMessage(op: unknown, a: unknown, b: unknown, c: unknown): void } | undefined };

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

export function discardPrepared(p: Prepared): void {
  p.port.run = undefined;
  releaseQuietly(p.control);
  releaseQuietly(p.context);
}

export function releaseQuietly(handle: { release(): void }): void {
  try {
    handle.release();
  } catch {
    // gone with the isolate
  }
}
