import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { call } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { assertAuthCases } from '../helpers/security.ts';

describe('the service', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.stop());

  it('answers /ping and /health/ready without a key', async () => {
    assert.deepEqual((await call(server, 'GET', '/ping')).body, { status: 'ok' });
    assert.deepEqual((await call(server, 'GET', '/health/ready')).body, { status: 'ready' });
  });

  it('echoes a request id and answers unknown routes with problem+json', async () => {
    const res = await call(server, 'GET', '/nope', { headers: { 'x-request-id': 'abc-123' } });
    assert.equal(res.status, 404);
    assert.equal(res.headers.get('x-request-id'), 'abc-123');
    assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
    assert.equal(res.body.request_id, 'abc-123');
  });

  it('serves the OpenAPI document generated from the routes, and the docs page', async () => {
    const doc = await call(server, 'GET', '/openapi.json');
    assert.equal(doc.body.openapi, '3.1.0');
    assert.ok(doc.body.paths['/applications'].post.requestBody);
    assert.deepEqual(doc.body.paths['/applications'].get.security, [{ ApiKey: [] }]);
    const page = await call(server, 'GET', '/docs/');
    assert.equal(page.status, 200);
    assert.match(page.text, /<title>Coffer /);
  });

  it('GET /tenants/self returns the caller\'s tenant', async () => {
    const res = await call(server, 'GET', '/tenants/self', { key: server.key });
    assert.equal(res.status, 200);
    assert.equal(res.body.id, server.tenantId);
    await assertAuthCases(server, { method: 'GET', path: '/tenants/self', permissions: ['tenant:read'], type: 'management' });
  });

  it('GET /permissions lists the catalogue, filtered by application type, for any valid key', async () => {
    const all = await call(server, 'GET', '/permissions', { key: server.key });
    assert.equal(all.status, 200);
    const names = all.body.map((p: { type: string }) => p.type);
    for (const name of ['application:create', 'token:read', 'token:use', 'session:authorize', 'log:read']) assert.ok(names.includes(name), name);
    for (const p of all.body) {
      assert.equal(typeof p.description, 'string');
      assert.ok(p.application_types.length > 0);
    }
    const pub = await call(server, 'GET', '/permissions?application_type=public', { key: server.key });
    assert.ok(pub.body.length > 0 && pub.body.length < all.body.length);
    assert.ok(pub.body.every((p: { application_types: string[] }) => p.application_types.includes('public')));
    assert.ok(!pub.body.some((p: { type: string }) => p.type === 'token:read'), 'public keys never read token data');
    assert.equal((await call(server, 'GET', '/permissions?application_type=root', { key: server.key })).status, 400);
    assert.equal((await call(server, 'GET', '/permissions')).status, 401);
  });
});
