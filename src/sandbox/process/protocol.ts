/**
 * The messages between the API process and a sandbox process (./child.ts), sent over Node's
 * IPC channel as JSON, several at once as a batch (./outbox.ts). Only plain data crosses: the API process keeps the SDK
 * and fetch functions of each run, and the sandbox process asks for them by name.
 */
import type { FetchRequest, RunResult, SandboxLimits } from '../types.ts';

/** A run, as the sandbox process receives it: the RunRequest without its functions. */
export type RunMessage = {
  t: 'run';
  run: number;
  /** The admission slot it holds (../fair-gate.ts): a slot's runs run one after another, in the order sent. */
  slot: number;
  tenantId: string;
  cacheKey: string;
  code: string;
  req: Record<string, unknown>;
  limits?: Partial<SandboxLimits>;
  /** The SDK's method names, or null when the run has no SDK. */
  sdk: string[] | null;
  fetch: boolean;
};

/**
 * A host function's failure as the sandbox may see it: only what src/sandbox/host-calls.ts's
 * exposeError reads. An error that is not meant for users crosses without its message.
 */
export type CallFailure = { status?: number; expose?: boolean; detail?: string; message?: string; errors?: unknown; data?: unknown };

/** The answer to a CallMessage: the value as JSON (undefined for undefined), or the failure. */
export type ReplyMessage = { t: 'reply'; run: number; call: number } & ({ ok: true; json: string | undefined } | { ok: false; error: CallFailure });

/** Take back the runs of a slot that have not started: each is answered with a WithdrawnMessage. */
export type WithdrawMessage = { t: 'withdraw'; slot: number };

export type ToChild = RunMessage | ReplyMessage | WithdrawMessage;

/** A run asks for an SDK method or a fetch of its host. */
export type CallMessage = { t: 'call'; run: number; call: number } & ({ kind: 'sdk'; method: string; args: unknown[] } | { kind: 'fetch'; request: FetchRequest });

/** What the process's warm isolates are and hold, after each run. */
export type Stats = { warmIsolates: number; warmBytes: number };

export type DoneMessage = { t: 'done'; run: number; result: RunResult; stats: Stats };

/** A run taken back before it started: nothing of it ran. */
export type WithdrawnMessage = { t: 'withdrawn'; run: number };

export type FromChild = { t: 'ready' } | CallMessage | DoneMessage | WithdrawnMessage;

/** What a sandbox process is started with (its argv[2], as JSON). */
export type ChildOptions = { maxWarmIsolates: number; maxWarmBytes: number; limits?: Partial<SandboxLimits> };
