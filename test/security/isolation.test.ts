import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { permissionsFor } from '../../src/access/permissions.ts';
import { call, createOtherTenant, type CallOptions, type Response } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { assertCreatable, createPathResources, keyWith, tenantKeys, validBody, type TenantKeys } from './resources.ts';
import { collectionsOf, fetchOpenApi, fillPath, keyTypeOf, label, operationsOf, type Operation } from './routes.ts';

/**
 * Isolation and access, generated from the served OpenAPI document: every route whose path
 * names an id gets a real resource of tenant A, then the same valid request
 *   - with tenant B's key holding every permission → 404 (another tenant's ids do not exist),
 *   - with a tenant-A key holding every other permission of its type → 403,
 *   - with no key or an unknown key → 401,
 *   - with ids whose parent is another resource (of A, or of B) → 404,
 * and finally with A's own key → 2xx, which proves the request was valid all along.
 * Nothing here is listed by hand: a new route with an id is a new case, and one whose
 * resource the suite cannot create fails (see RESOURCES in ./resources.ts).
 */

function assertProblem(res: Response, status: number, what: string): void {
  assert.equal(res.status, status, `${what}: expected ${status}, got ${res.status} ${res.text.slice(0, 300)}`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/, `${what}: problem+json`);
  assert.equal(res.body?.status, status, `${what}: the problem's status`);
}

describe('isolation and access, for every route that takes an id', () => {
  let server: TestServer;
  let a: TenantKeys;
  let b: TenantKeys;
  let routes: Operation[];
  const weakKeys = new Map<string, string>();

  before(async () => {
    server = await startTestServer();
    a = await tenantKeys(server.url, server.tenantId, server.key);
    const other = await createOtherTenant(server);
    b = await tenantKeys(server.url, other.tenant_id, other.api_key);
    routes = operationsOf(await fetchOpenApi(server.url)).filter((op) => op.pathParams.length > 0);
  });
  after(() => server?.stop());

  /** A tenant-A key of the route's type with every permission of that type but the route's. */
  async function weakKey(op: Operation): Promise<string | undefined> {
    const type = keyTypeOf(op);
    const others = permissionsFor(type).map((p) => p.type).filter((p) => !op.permissions.includes(p));
    if (op.permissions.length === 0 || others.length === 0) return undefined;
    const cacheKey = `${type}:${others.join(',')}`;
    if (!weakKeys.has(cacheKey)) weakKeys.set(cacheKey, await keyWith(server.url, a.keys.management, type, others, 'lacks a permission'));
    return weakKeys.get(cacheKey);
  }

  it('knows how to create the resource of every id in the route table', () => {
    assert.ok(routes.length >= 20, `only ${routes.length} routes with ids found: is the OpenAPI document read right?`);
    for (const op of routes) assertCreatable(op);
  });

  it('answers 404 to another tenant, 403 without the permission, 401 without a key', async (t) => {
    let cases = 0;
    for (const op of routes) {
      await t.test(label(op), async () => {
        assert.ok(op.secured, `${label(op)} takes an id but needs no API key: isolation cannot be generated for it`);
        const type = keyTypeOf(op);
        const values = await createPathResources(op, a);
        const path = fillPath(op.path, values);
        const valid = validBody(op);
        const opts: CallOptions = valid ? { body: valid.body, contentType: valid.contentType } : {};
        const send = (key: string | undefined, p = path) => call(server, op.method, p, { ...opts, ...(key === undefined ? {} : { key }) });

        assertProblem(await send(undefined), 401, `${label(op)} without a key`);
        assertProblem(await send('key_not-a-real-key'), 401, `${label(op)} with an unknown key`);
        assertProblem(await send(b.keys[type]), 404, `${label(op)} with another tenant's ${type} key`);

        const weak = await weakKey(op);
        if (weak) assertProblem(await send(weak), 403, `${label(op)} with a ${type} key lacking ${op.permissions.join(', ')}`);

        // Nested ids: a child that belongs to another parent, in this tenant or the other, does not exist here.
        const params = collectionsOf(op);
        if (params.length > 1) {
          const child = params.at(-1)!.param;
          const sibling = await createPathResources(op, a);
          const foreign = await createPathResources(op, b);
          for (const [whose, other] of [['another parent\'s', sibling], ['another tenant\'s', foreign]] as const) {
            const mixed = fillPath(op.path, { ...values, [child]: other[child] });
            assertProblem(await send(a.keys[type], mixed), 404, `${label(op)} with ${whose} ${child}`);
          }
        }

        // Last, as the owner: it succeeds, so the refusals above were about access, not a broken request.
        const own = await send(a.keys[type]);
        assert.ok(own.status >= 200 && own.status < 300, `${label(op)} with the owner's key: ${own.status} ${own.text.slice(0, 300)}`);
      });
      cases++;
    }
    assert.ok(cases >= routes.length, `${cases} cases for ${routes.length} routes with ids`);
  });
});
