/**
 * The failure a run of user code reports when it does not succeed (the function threw, say):
 * runtime/main.js sends it with "done". Every field comes from the isolate, so none is trusted:
 * the kind and status are held to those user code may end a run with, the data to the run's
 * limit.
 */
import { failure } from './failures.ts';
import { byteLength, parseUntrusted } from './host-calls.ts';
import type { SandboxFailure } from './types.ts';

/** Statuses user code may end a run with (besides those the host itself handed to it). */
const USER_STATUSES = new Set([400, 401, 403, 404, 422, 429]);
const KINDS = new Set(['user_error', 'invalid_code', 'too_large', 'memory', 'runtime']);

/**
 * The failure `meta` (the isolate's report) stands for. `handedStatuses`: statuses of host
 * errors handed to user code during the run, which it may pass on; `maxIoBytes`: the most the
 * error's data may take as JSON.
 */
export function userFailure(meta: Record<string, unknown>, handedStatuses: ReadonlySet<number>, maxIoBytes: number): SandboxFailure {
  let kind = typeof meta.kind === 'string' && KINDS.has(meta.kind) ? (meta.kind as SandboxFailure['kind']) : 'user_error';
  let status = typeof meta.status === 'number' ? meta.status : 422;
  if (kind === 'invalid_code') status = 400;
  else if (kind === 'too_large' || kind === 'memory') status = 422;
  else if (!USER_STATUSES.has(status) && !handedStatuses.has(status)) status = 422;
  if (kind === 'runtime' && status < 500) kind = 'user_error';
  if (status >= 500) kind = 'runtime';
  const message = typeof meta.message === 'string' && meta.message !== '' ? meta.message.slice(0, 2001) : 'The code threw an error.';
  let data: unknown;
  if (typeof meta.data === 'string' && byteLength(meta.data) <= maxIoBytes) {
    try {
      data = parseUntrusted(meta.data);
    } catch {
      // unreadable or too deep for the host's error handler: the error goes without it
      data = undefined;
    }
  }
  return failure(status, kind, message, data);
}
