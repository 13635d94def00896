/** The sandbox's public types (re-exported by ./index.ts). */

export type SandboxLimits = {
  /** Heap limit of each isolate, in MB (V8 may overshoot it by a little before it stops the code). */
  memoryMb: number;
  /** Wall time of one run, in ms, from the moment user code starts until its function settles. */
  timeoutMs: number;
  /** Maximum length of the code, in characters. */
  maxCodeChars: number;
  /** Maximum size in bytes of the JSON of `req`, of the result, and of every fetch / SDK / crypto message. */
  maxIoBytes: number;
  /** Maximum number of console lines kept (one more line says that the rest was dropped). */
  maxConsoleLines: number;
};

/** Host functions behind `bt`: JSON-compatible values in, JSON-compatible value out, copied. */
export type SdkHost = { [method: string]: (...args: unknown[]) => Promise<unknown> };

export type FetchRequest = { url: string; method: string; headers: Record<string, string>; body?: string };
export type FetchResponse = { status: number; headers: Record<string, string>; body: string };
export type FetchBridge = (req: FetchRequest) => Promise<FetchResponse>;

export type RunRequest = {
  tenantId: string;
  /** Warm isolates are reused per (tenantId, cacheKey), e.g. `${tenantId}:${reactorId}:${version}`. */
  cacheKey: string;
  code: string;
  /** The plain-data part of the function's argument, e.g. {args, configuration}; `bt` is added inside. */
  req: Record<string, unknown>;
  sdk?: SdkHost;
  fetch?: FetchBridge;
  limits?: Partial<SandboxLimits>;
  /** What the code is for (`reactor`, `proxy_transform`, …): a label of the run metrics. */
  purpose?: string;
};

/** Told of every run once it settled (metrics); it must not throw, and cannot change the result. */
export type RunObserver = (request: RunRequest, result: RunResult) => void;

export type SandboxFailure = {
  status: number;
  title: string;
  detail: string;
  kind: 'user_error' | 'timeout' | 'memory' | 'too_large' | 'invalid_code' | 'runtime' | 'busy';
  data?: unknown;
};

export type RunResult =
  | { ok: true; value: unknown; console: string[]; durationMs: number }
  | { ok: false; error: SandboxFailure; console: string[]; durationMs: number };
