import assert from 'node:assert/strict';
import type { Response } from './http.ts';

/** A 400 problem+json whose `errors` names `field` (a path such as `body.name` or `query.size`). */
export function assertInvalid(res: Response, field: string): void {
  assert.equal(res.status, 400, `expected 400 for ${field}, got ${res.status} ${res.text}`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.ok(res.body.errors?.[field]?.length > 0, `errors should name ${field}: ${JSON.stringify(res.body.errors)}`);
}

/** A 404 problem+json: what an unknown id, or another tenant's, gets. */
export function assertNotFound(res: Response): void {
  assert.equal(res.status, 404, res.text);
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.equal(res.body.status, 404);
}
