import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { call, createApplication, createOtherTenant, type Response } from '../helpers/http.ts';
import { assertInvalid, assertNotFound } from '../helpers/problems.ts';
import { assertAuthCases } from '../helpers/security.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';

/** /proxies management: create, read, list, replace, merge-patch, delete; validation, isolation, audit. */

const PROXY = { name: 'charges', destination_url: 'https://api.processor.example/v1' };
const CODE = 'module.exports = async function (req) { return { body: req.args.body, headers: req.args.headers }; };';
const MERGE = 'application/merge-patch+json';

describe('proxies API', () => {
  let server: TestServer;
  let sql: pg.Client;
  let managementId: string;
  let privateApp: { id: string; key: string };
  let publicApp: { id: string; key: string };

  before(async () => {
    server = await startTestServer({ WORKERS: '0' });
    sql = new pg.Client({ connectionString: server.config.databaseUrl });
    await sql.connect();
    managementId = (await call(server, 'GET', '/applications/key', { key: server.key })).body.id;
    privateApp = await createApplication(server, { name: 'backend', type: 'private', permissions: ['token:use'] });
    publicApp = await createApplication(server, { name: 'browser', type: 'public', permissions: ['token:create'] });
  });
  after(async () => {
    await sql.end();
    await server.stop();
  });

  async function create(body: unknown, key = server.key): Promise<Response> {
    const res = await call(server, 'POST', '/proxies', { key, body });
    if (typeof res.body?.key === 'string') rememberSecret(res.body.key);
    return res;
  }

  async function created(body: Record<string, unknown> = PROXY) {
    const res = await create(body);
    assert.equal(res.status, 201, res.text);
    return res.body;
  }

  const patch = (id: string, body: unknown, key = server.key) => call(server, 'PATCH', `/proxies/${id}`, { key, body, contentType: MERGE });

  describe('POST /proxies', () => {
    it('creates a proxy with a generated key and the defaults', async () => {
      const p = await created();
      assert.match(p.id, /^[0-9a-f-]{36}$/);
      assert.equal(p.tenant_id, server.tenantId);
      assert.equal(p.name, 'charges');
      assert.equal(p.destination_url, PROXY.destination_url);
      assert.equal(p.require_auth, true);
      assert.match(p.key, /^proxy_[A-Za-z0-9_-]{43}$/);
      for (const absent of ['request_transform', 'response_transform', 'application_id', 'configuration', 'modified_at']) assert.equal(p[absent], undefined, absent);
      assert.equal(p.created_by, managementId);
      assert.ok(Date.parse(p.created_at) > Date.now() - 60_000);
      // Keys are unguessable: two proxies never share one.
      assert.notEqual((await created()).key, p.key);
    });

    it('stores every field, the key and configuration only as ciphertext', async () => {
      const body = {
        name: 'full',
        destination_url: 'https://api.processor.example/v2?merchant=7',
        require_auth: false,
        request_transform: { code: CODE },
        response_transform: { type: 'mask', matcher: 'regex', expression: '"pan":"(\\d+)"', replacement: '*' },
        application: { id: privateApp.id },
        configuration: { API_SECRET: 'config-secret-value-991' },
      };
      rememberSecret('config-secret-value-991');
      const p = await created(body);
      assert.equal(p.require_auth, false);
      assert.deepEqual(p.request_transform, { code: CODE });
      assert.deepEqual(p.response_transform, body.response_transform);
      assert.equal(p.application_id, privateApp.id);
      assert.deepEqual(p.configuration, body.configuration);
      const got = await call(server, 'GET', `/proxies/${p.id}`, { key: server.key });
      assert.deepEqual(got.body, p);
      const row = (await sql.query('SELECT * FROM proxies WHERE id = $1', [p.id])).rows[0];
      const stored = JSON.stringify(row) + row.secret_ciphertext.toString('latin1');
      assert.ok(!stored.includes(p.key), 'the key never rests in plaintext');
      assert.ok(!stored.includes('config-secret-value-991'), 'the configuration never rests in plaintext');
    });

    it('accepts a code response transform (type defaults to code) and the chase_stratus_pan matcher', async () => {
      assert.deepEqual((await created({ ...PROXY, response_transform: { code: CODE } })).response_transform, { type: 'code', code: CODE });
      const chase = await created({ ...PROXY, response_transform: { type: 'mask', matcher: 'chase_stratus_pan', replacement: 'X' } });
      assert.deepEqual(chase.response_transform, { type: 'mask', matcher: 'chase_stratus_pan', replacement: 'X' });
      // One character, even outside the BMP.
      assert.equal((await create({ ...PROXY, response_transform: { type: 'mask', matcher: 'chase_stratus_pan', replacement: '🔒' } })).status, 201);
      assert.equal((await created({ ...PROXY, application: { id: publicApp.id } })).application_id, publicApp.id);
    });

    it('validates fields', async () => {
      assertInvalid(await create({ destination_url: PROXY.destination_url }), 'body.name');
      assertInvalid(await create({ ...PROXY, name: 'x'.repeat(201) }), 'body.name');
      assertInvalid(await create({ name: 'x' }), 'body.destination_url');
      for (const url of ['not a url', '/relative', 'ftp://files.example/', 'https://user:pw@api.example/']) {
        assertInvalid(await create({ ...PROXY, destination_url: url }), 'body.destination_url');
      }
      assertInvalid(await create({ ...PROXY, destination_url: 'http://127.0.0.1:8080/' }), 'body.destination_url');
      const smtp = await create({ ...PROXY, destination_url: 'http://mail.example:25/' });
      assertInvalid(smtp, 'body.destination_url');
      assert.deepEqual(smtp.body.errors['body.destination_url'], ['must not use port 25, which belongs to another protocol: outbound HTTP to it is refused']);
      // The URL parser drops these silently: the stored URL would name one host and call another.
      for (const url of [` ${PROXY.destination_url} `, 'https://api.pro\tcessor.example/v1', `${PROXY.destination_url}\n`, 'https://api.processor.example/a b', 'https://api.processor\r\n.example/']) {
        assertInvalid(await create({ ...PROXY, destination_url: url }), 'body.destination_url');
      }
      // Within 2048 characters as sent, over it once percent-encoded.
      assertInvalid(await create({ ...PROXY, destination_url: `https://api.processor.example/${'é'.repeat(1000)}` }), 'body.destination_url');
      assertInvalid(await create({ ...PROXY, require_auth: 'yes' }), 'body.require_auth');
      assertInvalid(await create({ ...PROXY, configuration: { A: 1 } }), 'body.configuration.A');
      assertInvalid(await create({ ...PROXY, configuration: { '': 'v' } }), 'body.configuration');
      assertInvalid(await create({ ...PROXY, configuration: { ['K'.repeat(201)]: 'v' } }), 'body.configuration');
      assert.equal((await create({ ...PROXY, configuration: { ['K'.repeat(200)]: 'v' } })).status, 201);
      const big = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`K${i}`, 'v'.repeat(10_000)]));
      assertInvalid(await create({ ...PROXY, configuration: big }), 'body.configuration');
      assertInvalid(await create({ ...PROXY, unknown: 1 }), 'body.unknown');
    });

    it('stores and shows destination_url normalised: the URL invocations go to', async () => {
      const cases: [string, string][] = [
        ['https:///api.processor.example/v1', 'https://api.processor.example/v1'],
        ['HTTPS://API.Processor.Example:443', 'https://api.processor.example/'],
        ['http:api.processor.example/in?q=1', 'http://api.processor.example/in?q=1'],
        ['https://api.processor.example\\v1\\', 'https://api.processor.example/v1/'],
        ['https://präfix.example/ä?q=ü', 'https://xn--prfix-hra.example/%C3%A4?q=%C3%BC'],
        // A fragment is never sent: the path and query of each invocation go where it stood.
        ['https://api.processor.example/v1#section', 'https://api.processor.example/v1'],
        ['https://api.processor.example/v1/?merchant=7#', 'https://api.processor.example/v1/?merchant=7'],
        // Already normalised: kept as written, trailing slash or none, query and all.
        ['https://api.processor.example/v1', 'https://api.processor.example/v1'],
        ['https://api.processor.example/v1/?merchant=7&x=a%20b', 'https://api.processor.example/v1/?merchant=7&x=a%20b'],
      ];
      for (const [given, stored] of cases) {
        const p = await created({ ...PROXY, destination_url: given });
        assert.equal(p.destination_url, stored, given);
        assert.equal((await call(server, 'GET', `/proxies/${p.id}`, { key: server.key })).body.destination_url, stored);
        const put = await call(server, 'PUT', `/proxies/${p.id}`, { key: server.key, body: { ...PROXY, destination_url: given } });
        assert.equal(put.body.destination_url, stored, `PUT ${given}`);
        assert.equal((await patch(p.id, { destination_url: given })).status, 204);
        assert.equal((await call(server, 'GET', `/proxies/${p.id}`, { key: server.key })).body.destination_url, stored, `PATCH ${given}`);
      }
    });

    it('validates transforms at write time', async () => {
      const rt = (t: Record<string, unknown>) => create({ ...PROXY, response_transform: t });
      assertInvalid(await create({ ...PROXY, request_transform: { code: 'module.exports = async function ( {' } }), 'body.request_transform.code');
      assertInvalid(await create({ ...PROXY, request_transform: {} }), 'body.request_transform.code');
      assertInvalid(await rt({ code: 'this is not javascript' }), 'body.response_transform.code');
      assertInvalid(await rt({ type: 'code' }), 'body.response_transform.code');
      assertInvalid(await rt({ type: 'code', code: CODE, matcher: 'regex' }), 'body.response_transform.matcher');
      assertInvalid(await rt({ type: 'mask', replacement: '*' }), 'body.response_transform.matcher');
      assertInvalid(await rt({ type: 'mask', matcher: 'regex', expression: '(\\d+)' }), 'body.response_transform.replacement');
      assertInvalid(await rt({ type: 'mask', matcher: 'regex', expression: '(\\d+)', replacement: '**' }), 'body.response_transform.replacement');
      assertInvalid(await rt({ type: 'mask', matcher: 'regex', expression: '(\\d+)', replacement: '' }), 'body.response_transform.replacement');
      assertInvalid(await rt({ type: 'mask', matcher: 'regex', replacement: '*' }), 'body.response_transform.expression');
      assertInvalid(await rt({ type: 'mask', matcher: 'regex', expression: '\\d{16}', replacement: '*' }), 'body.response_transform.expression');
      assertInvalid(await rt({ type: 'mask', matcher: 'regex', expression: '(?:\\d+)', replacement: '*' }), 'body.response_transform.expression');
      assertInvalid(await rt({ type: 'mask', matcher: 'regex', expression: '(\\d+', replacement: '*' }), 'body.response_transform.expression');
      assertInvalid(await rt({ type: 'mask', matcher: 'chase_stratus_pan', expression: '(\\d+)', replacement: '*' }), 'body.response_transform.expression');
      assertInvalid(await rt({ type: 'mask', matcher: 'luhn', replacement: '*' }), 'body.response_transform.matcher');
      assertInvalid(await rt({ type: 'mask', matcher: 'regex', expression: '(\\d+)', replacement: '*', code: CODE }), 'body.response_transform.code');
      // Named groups count as capture groups.
      assert.equal((await rt({ type: 'mask', matcher: 'regex', expression: '(?<pan>\\d{16})', replacement: '*' })).status, 201);
    });

    it('needs a public or private application of this tenant', async () => {
      assertInvalid(await create({ ...PROXY, application: { id: managementId } }), 'body.application.id');
      assertInvalid(await create({ ...PROXY, application: { id: randomUUID() } }), 'body.application.id');
      assertInvalid(await create({ ...PROXY, application: { id: 'nope' } }), 'body.application.id');
      const other = await createOtherTenant(server);
      const theirs = await createApplication(server, { name: 'theirs', type: 'private', permissions: ['token:use'] }, other.api_key);
      assertInvalid(await create({ ...PROXY, application: { id: theirs.id } }), 'body.application.id');
    });

    it('security: permission proxy:create on a management key', async () => {
      await assertAuthCases(server, { method: 'POST', path: '/proxies', permissions: ['proxy:create'], type: 'management', body: PROXY });
      assert.equal((await create(PROXY, privateApp.key)).status, 403);
    });
  });

  describe('GET /proxies', () => {
    it('lists with offset pagination, the id filter and name wildcards', async () => {
      const a = await created({ ...PROXY, name: 'Stripe charges' });
      const b = await created({ ...PROXY, name: 'stripe refunds' });
      const c = await created({ ...PROXY, name: '100%_literal' });
      const list = async (q: string) => {
        const res = await call(server, 'GET', `/proxies${q}`, { key: server.key });
        assert.equal(res.status, 200, res.text);
        return res.body;
      };
      const ids = (page: any) => page.data.map((p: any) => p.id);
      assert.deepEqual(ids(await list(`?id=${a.id}&id=${c.id}`)), [a.id, c.id]);
      assert.deepEqual(ids(await list('?name=stripe*')), [a.id, b.id]);
      assert.deepEqual(ids(await list('?name=*REFUNDS')), [b.id]);
      // Without a *, anywhere in the name, as GET /reactors matches.
      assert.deepEqual(ids(await list('?name=stripe')), [a.id, b.id]);
      assert.deepEqual(ids(await list('?name=RIPE%20CHA')), [a.id]);
      assert.deepEqual(ids(await list('?name=Stripe%20charges')), [a.id]);
      // % and _ are literal characters, not patterns.
      assert.deepEqual(ids(await list(`?name=${encodeURIComponent('100%_*')}`)), [c.id]);
      assert.deepEqual(ids(await list('?name=1__%25*')), []);
      const all = await list('?size=2&page=1');
      assert.equal(all.pagination.page_size, 2);
      assert.equal(all.data.length, 2);
      assert.ok(all.pagination.total_items >= 3);
      assert.equal(all.pagination.total_pages, Math.ceil(all.pagination.total_items / 2));
      assert.ok(all.data.every((p: any) => typeof p.key === 'string'));
      assertInvalid(await call(server, 'GET', '/proxies?id=nope', { key: server.key }), 'query.id[0]');
      assertInvalid(await call(server, 'GET', '/proxies?size=101', { key: server.key }), 'query.size');
    });

    it('security: proxy:read; another tenant sees none of these', async () => {
      await assertAuthCases(server, { method: 'GET', path: '/proxies', permissions: ['proxy:read'], type: 'management' });
      const other = await createOtherTenant(server);
      const res = await call(server, 'GET', '/proxies', { key: other.api_key });
      assert.equal(res.status, 200);
      assert.equal(res.body.pagination.total_items, 0);
    });
  });

  describe('GET /proxies/{id}', () => {
    it('returns the proxy with its key; 404 for unknown, malformed and other tenants\' ids', async () => {
      const p = await created();
      const res = await call(server, 'GET', `/proxies/${p.id}`, { key: server.key });
      assert.equal(res.status, 200);
      assert.equal(res.body.key, p.key);
      assertNotFound(await call(server, 'GET', `/proxies/${randomUUID()}`, { key: server.key }));
      assertInvalid(await call(server, 'GET', '/proxies/nope', { key: server.key }), 'params.id');
      const other = await createOtherTenant(server);
      assertNotFound(await call(server, 'GET', `/proxies/${p.id}`, { key: other.api_key }));
      await assertAuthCases(server, { method: 'GET', path: `/proxies/${p.id}`, permissions: ['proxy:read'], type: 'management' });
    });
  });

  describe('PUT /proxies/{id}', () => {
    it('replaces the proxy and keeps its key; omitted optional fields are cleared', async () => {
      const p = await created({ ...PROXY, configuration: { A: '1' }, request_transform: { code: CODE } });
      const res = await call(server, 'PUT', `/proxies/${p.id}`, { key: server.key, body: { name: 'renamed', destination_url: 'https://other.example/', require_auth: false } });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.key, p.key);
      assert.equal(res.body.name, 'renamed');
      assert.equal(res.body.destination_url, 'https://other.example/');
      assert.equal(res.body.require_auth, false);
      assert.equal(res.body.configuration, undefined);
      assert.equal(res.body.request_transform, undefined);
      assert.equal(res.body.modified_by, managementId);
      assert.ok(res.body.modified_at);
      assert.deepEqual((await call(server, 'GET', `/proxies/${p.id}`, { key: server.key })).body, res.body);
    });

    it('needs name and destination_url, validates like create, 404s elsewhere', async () => {
      const p = await created();
      assertInvalid(await call(server, 'PUT', `/proxies/${p.id}`, { key: server.key, body: { name: 'x' } }), 'body.destination_url');
      assertInvalid(await call(server, 'PUT', `/proxies/${p.id}`, { key: server.key, body: { destination_url: PROXY.destination_url } }), 'body.name');
      assertInvalid(
        await call(server, 'PUT', `/proxies/${p.id}`, { key: server.key, body: { ...PROXY, response_transform: { type: 'mask', matcher: 'regex', expression: 'x', replacement: '*' } } }),
        'body.response_transform.expression',
      );
      assertNotFound(await call(server, 'PUT', `/proxies/${randomUUID()}`, { key: server.key, body: PROXY }));
      const other = await createOtherTenant(server);
      assertNotFound(await call(server, 'PUT', `/proxies/${p.id}`, { key: other.api_key, body: PROXY }));
      await assertAuthCases(server, { method: 'PUT', path: `/proxies/${p.id}`, permissions: ['proxy:update'], type: 'management', body: PROXY });
    });
  });

  describe('PATCH /proxies/{id}', () => {
    it('merges an RFC 7386 patch and answers 204', async () => {
      const p = await created({
        ...PROXY,
        configuration: { KEEP: 'k', DROP: 'd' },
        response_transform: { type: 'mask', matcher: 'regex', expression: '(\\d+)', replacement: '*' },
        application: { id: privateApp.id },
      });
      const res = await patch(p.id, { name: 'patched', configuration: { DROP: null, ADD: 'a' }, response_transform: { replacement: '#' }, application: null });
      assert.equal(res.status, 204, res.text);
      assert.equal(res.text, '');
      const got = (await call(server, 'GET', `/proxies/${p.id}`, { key: server.key })).body;
      assert.equal(got.name, 'patched');
      assert.equal(got.destination_url, PROXY.destination_url);
      assert.equal(got.key, p.key);
      assert.deepEqual(got.configuration, { KEEP: 'k', ADD: 'a' });
      assert.deepEqual(got.response_transform, { type: 'mask', matcher: 'regex', expression: '(\\d+)', replacement: '#' });
      assert.equal(got.application_id, undefined);
      // Switching the transform's type drops the fields of the old type with null.
      assert.equal((await patch(p.id, { response_transform: { type: 'code', code: CODE, matcher: null, expression: null, replacement: null } })).status, 204);
      assert.deepEqual((await call(server, 'GET', `/proxies/${p.id}`, { key: server.key })).body.response_transform, { type: 'code', code: CODE });
    });

    it('concurrent patches each apply to the one before: none is lost', async () => {
      const p = await created({ ...PROXY, configuration: {} });
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => patch(p.id, { configuration: { [`K${i}`]: String(i) } })));
      for (const res of results) assert.equal(res.status, 204, res.text);
      const got = (await call(server, 'GET', `/proxies/${p.id}`, { key: server.key })).body;
      assert.deepEqual(got.configuration, Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`K${i}`, String(i)])));
    });

    it('checks the merged proxy; 415 without merge-patch; 404 elsewhere', async () => {
      const p = await created();
      assertInvalid(await patch(p.id, { name: null }), 'body.name');
      assertInvalid(await patch(p.id, { destination_url: 'ftp://x.example/' }), 'body.destination_url');
      assertInvalid(await patch(p.id, { configuration: { '': 'v' } }), 'body.configuration');
      assertInvalid(await patch(p.id, { response_transform: { type: 'mask', matcher: 'regex', replacement: '*' } }), 'body.response_transform.expression');
      assertInvalid(await patch(p.id, { unknown: 1 }), 'body.unknown');
      const json = await call(server, 'PATCH', `/proxies/${p.id}`, { key: server.key, body: { name: 'x' } });
      assert.equal(json.status, 415, json.text);
      assertNotFound(await patch(randomUUID(), { name: 'x' }));
      const other = await createOtherTenant(server);
      assertNotFound(await patch(p.id, { name: 'x' }, other.api_key));
      await assertAuthCases(server, { method: 'PATCH', path: `/proxies/${p.id}`, permissions: ['proxy:update'], type: 'management', body: { name: 'y' }, contentType: MERGE });
      assert.equal((await call(server, 'GET', `/proxies/${p.id}`, { key: server.key })).body.name, PROXY.name);
    });
  });

  describe('DELETE /proxies/{id}', () => {
    it('deletes; then 404; other tenants get 404 and delete nothing', async () => {
      const p = await created();
      const other = await createOtherTenant(server);
      assertNotFound(await call(server, 'DELETE', `/proxies/${p.id}`, { key: other.api_key }));
      await assertAuthCases(server, { method: 'DELETE', path: `/proxies/${p.id}`, permissions: ['proxy:delete'], type: 'management' });
      const res = await call(server, 'DELETE', `/proxies/${p.id}`, { key: server.key });
      assert.equal(res.status, 204);
      assertNotFound(await call(server, 'GET', `/proxies/${p.id}`, { key: server.key }));
      assertNotFound(await call(server, 'DELETE', `/proxies/${p.id}`, { key: server.key }));
    });

    it('deleting the application leaves the proxy without one', async () => {
      const app = await createApplication(server, { name: 'short-lived', type: 'private', permissions: ['token:use'] });
      const p = await created({ ...PROXY, application: { id: app.id } });
      assert.equal((await call(server, 'DELETE', `/applications/${app.id}`, { key: server.key })).status, 204);
      assert.equal((await call(server, 'GET', `/proxies/${p.id}`, { key: server.key })).body.application_id, undefined);
    });
  });

  it('writes one audit event per change, never the key or configuration', async () => {
    const p = await created({ ...PROXY, configuration: { S: 'audit-secret-3310' } });
    rememberSecret('audit-secret-3310');
    await call(server, 'PUT', `/proxies/${p.id}`, { key: server.key, body: PROXY });
    await patch(p.id, { name: 'p2' });
    await call(server, 'DELETE', `/proxies/${p.id}`, { key: server.key });
    const res = await call(server, 'GET', `/logs?entity_type=proxy&entity_id=${p.id}`, { key: server.key });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body.data.map((e: any) => e.operation).sort(), ['create', 'delete', 'patch', 'update']);
    assert.ok(!res.text.includes(p.key) && !res.text.includes('audit-secret-3310'));
    const types = await call(server, 'GET', '/logs/entity-types', { key: server.key });
    assert.ok(types.body.includes('proxy'));
  });

  it('documents the routes in the OpenAPI document', async () => {
    const doc = (await call(server, 'GET', '/openapi.json')).body;
    assert.ok(doc.paths['/proxies']?.post && doc.paths['/proxies']?.get);
    assert.ok(doc.paths['/proxies/{id}']?.patch);
    assert.ok(doc.paths['/proxy']?.post && doc.paths['/proxy']?.get);
  });
});
