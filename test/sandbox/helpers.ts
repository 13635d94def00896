import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type { RunRequest, RunResult, Sandbox, SandboxFailure } from '../../src/sandbox/index.ts';

export type Run = (code: string, more?: Partial<RunRequest>) => Promise<RunResult>;

/** Runs `code` for tenant t1 by default, with a cache key derived from the code (as reactors do). */
export function runner(sb: Sandbox, defaults: Partial<RunRequest> = {}): Run {
  return (code, more = {}) => {
    const tenantId = more.tenantId ?? defaults.tenantId ?? 't1';
    const cacheKey = `${tenantId}:${createHash('sha256').update(code).digest('hex').slice(0, 16)}`;
    return sb.run({ tenantId, cacheKey, code, req: { args: {}, configuration: {} }, ...defaults, ...more });
  };
}

export function value(r: RunResult): unknown {
  assert.ok(r.ok, `expected success, got ${JSON.stringify(r)}`);
  return r.value;
}

/** What a failure should be; a RegExp matches a field's text. */
export type Expected = { [K in keyof SandboxFailure]?: SandboxFailure[K] | RegExp };

export function failed(r: RunResult, expected: Expected): SandboxFailure {
  assert.equal(r.ok, false, `expected a failure, got ${JSON.stringify(r)}`);
  const error = (r as { error: SandboxFailure }).error;
  for (const [k, v] of Object.entries(expected)) {
    if (v instanceof RegExp) assert.match(String(error[k as keyof SandboxFailure]), v, `${k} of ${JSON.stringify(error)}`);
    else assert.deepEqual(error[k as keyof SandboxFailure], v, `${k} of ${JSON.stringify(error)}`);
  }
  assert.equal(typeof error.title, 'string');
  assert.equal(typeof error.detail, 'string');
  return error;
}
