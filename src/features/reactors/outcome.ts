import { ApiError, type Problem } from '../../http/errors.ts';
import type { SandboxFailure } from '../../sandbox/index.ts';

/** What a run ended in: the Reactor Response, or the problem it is answered with. */
export type Outcome = { ok: true; response: { tokens?: unknown; raw?: unknown } } | Failure;
export type Failure = { ok: false; status: number; detail: string; errors?: Record<string, string[]>; data?: unknown };

export function failed(f: SandboxFailure): Outcome {
  return { ok: false, status: f.status, detail: f.detail, ...(f.data !== undefined ? { data: f.data } : {}) };
}

/**
 * A failed run as problem+json: the ApiError fields plus `data`, what the code's error class
 * carried (`new BadRequestError('card is required', { field: 'card' })`), which the caller
 * needs to act on the error.
 */
export class ReactorProblem extends ApiError {
  readonly data: unknown;
  /** The lines the code printed, for a caller who may see them (a signed-in member). */
  readonly console: string[] | undefined;

  constructor(f: Failure, console?: string[]) {
    super(f.status, f.detail, f.errors);
    this.data = f.data;
    this.console = console;
  }

  override toProblem(requestId: string): Problem & { data?: unknown; console?: string[] } {
    const problem = super.toProblem(requestId);
    return {
      ...problem,
      ...(this.data === undefined ? {} : { data: this.data }),
      ...(this.console === undefined ? {} : { console: this.console }),
    };
  }
}
