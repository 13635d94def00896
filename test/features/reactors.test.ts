import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { call, createApplication, createOtherTenant, type Response } from '../helpers/http.ts';
import { assertAuthCases } from '../helpers/security.ts';
import { until } from '../helpers/until.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * /reactors management: create, read, list, replace, merge-patch, delete; validation of
 * name, code, configuration and application; tenant isolation; the audit log; and that
 * a changed reactor runs its new code at once (warm isolates are per version).
 * Invocation is covered by reactors-react.test.ts and reactors-async.test.ts.
 */

const CODE = `module.exports = async function (req) { return { raw: { hello: req.configuration.GREETING } }; };`;
const REACTOR = { name: 'greeter', code: CODE, configuration: { GREETING: 'hi' } };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MERGE = 'application/merge-patch+json';

function assertInvalid(res: Response, field: string, detail?: RegExp): void {
  assert.equal(res.status, 400, `expected 400 for ${field}, got ${res.status} ${res.text}`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.ok(res.body.errors?.[field]?.length > 0, `errors should name ${field}: ${JSON.stringify(res.body.errors)}`);
  if (detail) assert.match(res.body.errors[field].join(' '), detail);
}

function assertNotFound(res: Response): void {
  assert.equal(res.status, 404, res.text);
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.equal(res.body.status, 404);
}

describe('reactors API', () => {
  let server: TestServer;
  let managementId: string;
  let privateApp: { id: string; key: string };
  let publicApp: { id: string; key: string };
  /** A key that may invoke reactors (token:use) in every container. */
  let useKey: string;
  let other: { tenant_id: string; api_key: string };
  let sql: pg.Client;

  before(async () => {
    // No workers: asynchronous runs are accepted and stay queued (see 'accepted, not yet run').
    server = await startTestServer({ WORKERS: '0' });
    sql = new pg.Client({ connectionString: server.config.databaseUrl });
    await sql.connect();
    managementId = (await call(server, 'GET', '/applications/key', { key: server.key })).body.id;
    privateApp = await createApplication(server, { name: 'reactor backend', type: 'private', permissions: ['token:create', 'token:read'] });
    publicApp = await createApplication(server, { name: 'reactor browser', type: 'public', permissions: ['token:create'] });
    useKey = (await createApplication(server, { name: 'invoker', type: 'private', permissions: ['token:use'] })).key;
    other = await createOtherTenant(server);
  });
  after(async () => {
    await sql?.end();
    await server?.stop();
  });

  const create = (body: unknown, key = server.key) => call(server, 'POST', '/reactors', { key, body });
  async function created(body: Record<string, unknown> = REACTOR, key = server.key) {
    const res = await create(body, key);
    assert.equal(res.status, 201, res.text);
    return res.body;
  }
  const patch = (id: string, body: unknown, key = server.key) => call(server, 'PATCH', `/reactors/${id}`, { key, body, contentType: MERGE });
  const react = (id: string, args?: unknown, key = useKey) => call(server, 'POST', `/reactors/${id}/react`, { key, body: args === undefined ? {} : { args } });

  describe('POST /reactors', () => {
    it('stores the configuration only encrypted, and returns it opened', async () => {
      const secret = `sk_live_${randomUUID()}`;
      rememberSecret(secret);
      const r = await created({ ...REACTOR, configuration: { API_KEY: secret } });
      assert.deepEqual(r.configuration, { API_KEY: secret });
      const row = await sql.query('SELECT t::text AS text FROM reactors t WHERE id = $1', [r.id]);
      assert.equal(row.rows.length, 1);
      assert.ok(!row.rows[0].text.includes(secret), 'the configuration is not readable in the table');
      assert.deepEqual((await call(server, 'GET', `/reactors/${r.id}`, { key: server.key })).body.configuration, { API_KEY: secret });
    });

    it('creates a reactor and returns it', async () => {
      const before = Date.now();
      const res = await create({ ...REACTOR, application: { id: privateApp.id } });
      assert.equal(res.status, 201, res.text);
      const r = res.body;
      assert.match(r.id, UUID);
      assert.equal(r.tenant_id, server.tenantId);
      assert.equal(r.name, REACTOR.name);
      assert.equal(r.code, CODE);
      assert.deepEqual(r.configuration, { GREETING: 'hi' });
      assert.deepEqual(r.application, { id: privateApp.id, name: 'reactor backend', type: 'private' });
      assert.equal(r.created_by, managementId);
      assert.ok(Date.parse(r.created_at) >= before - 1000 && Date.parse(r.created_at) <= Date.now() + 1000);
      assert.equal(r.modified_at, undefined);
      assert.equal(r.modified_by, undefined);

      const got = await call(server, 'GET', `/reactors/${r.id}`, { key: server.key });
      assert.equal(got.status, 200, got.text);
      assert.deepEqual(got.body, r);
    });

    it('takes a public application, or none', async () => {
      const pub = await created({ ...REACTOR, application: { id: publicApp.id } });
      assert.deepEqual(pub.application, { id: publicApp.id, name: 'reactor browser', type: 'public' });
      const none = await created({ ...REACTOR, application: null });
      assert.equal(none.application, undefined);
      const omitted = await created(REACTOR);
      assert.equal(omitted.application, undefined);
    });

    it('accepts an empty configuration and a name of exactly 200 characters', async () => {
      const r = await created({ name: 'n'.repeat(200), code: CODE, configuration: {} });
      assert.equal(r.name.length, 200);
      assert.deepEqual(r.configuration, {});
    });

    it('requires name, code and configuration', async () => {
      assertInvalid(await create({ code: CODE, configuration: {} }), 'body.name');
      assertInvalid(await create({ name: 'x', configuration: {} }), 'body.code');
      assertInvalid(await create({ name: 'x', code: CODE }), 'body.configuration');
      assertInvalid(await create({ name: '', code: CODE, configuration: {} }), 'body.name');
      assertInvalid(await create({ name: 'x', code: '', configuration: {} }), 'body.code');
    });

    it('limits the name to 200 characters', async () => {
      assertInvalid(await create({ ...REACTOR, name: 'n'.repeat(201) }), 'body.name', /200/);
    });

    it('limits the code to 50,000 characters', async () => {
      const body = `module.exports = async () => ({ raw: 1 });\n`;
      const exact = body + '/'.repeat(50_000 - body.length);
      assert.equal(exact.length, 50_000);
      // A comment line fills the code up: 50,000 characters exactly is valid, one more is not.
      const ok = await created({ ...REACTOR, code: exact });
      assert.equal(ok.code.length, 50_000);
      assertInvalid(await create({ ...REACTOR, code: exact + '/' }), 'body.code', /50000|50,000/);
    });

    it('rejects code with a syntax error, naming the line', async () => {
      const res = await create({ ...REACTOR, code: 'module.exports = async function (req) {\n  return { raw: 1 ;\n};' });
      assertInvalid(res, 'body.code', /SyntaxError.*line 2/);
    });

    it('bounds the configuration at 256 KiB of JSON in all, each key and value within its own limits', async () => {
      const config = (keys: number) => Object.fromEntries(Array.from({ length: keys }, (_, i) => [`K${i}`, 'v'.repeat(10_000)]));
      assertInvalid(await create({ ...REACTOR, configuration: config(30) }), 'body.configuration');
      const fits = await created({ ...REACTOR, configuration: config(25) });
      assert.equal(Object.keys(fits.configuration).length, 25);
      // A patch cannot grow it past the bound either, and leaves it as it was.
      const res = await patch(fits.id, { configuration: config(30) });
      assertInvalid(res, 'body.configuration');
      assert.equal(Object.keys((await call(server, 'GET', `/reactors/${fits.id}`, { key: server.key })).body.configuration).length, 25);
    });

    it('rejects a configuration that is not a map of strings', async () => {
      assertInvalid(await create({ ...REACTOR, configuration: { A: 1 } }), 'body.configuration.A');
      assertInvalid(await create({ ...REACTOR, configuration: { A: { nested: 'x' } } }), 'body.configuration.A');
      assertInvalid(await create({ ...REACTOR, configuration: { A: null } }), 'body.configuration.A');
      assertInvalid(await create({ ...REACTOR, configuration: ['a'] }), 'body.configuration');
    });

    it('checks configuration keys: 1 to 200 characters, the error naming the key', async () => {
      const empty = await create({ ...REACTOR, configuration: { '': 'v' } });
      assertInvalid(empty, 'body.configuration');
      assert.deepEqual(empty.body.errors['body.configuration'], ['has a key "" that must not be empty']);
      const long = await create({ ...REACTOR, configuration: { ['K'.repeat(201)]: 'v' } });
      assert.deepEqual(long.body.errors['body.configuration'], [`has a key "${'K'.repeat(40)}…" that must be at most 200 characters`]);
      assert.equal((await create({ ...REACTOR, configuration: { ['K'.repeat(200)]: 'v' } })).status, 201);
      const r = await created();
      assertInvalid(await patch(r.id, { configuration: { '': 'v' } }), 'body.configuration');
      assertInvalid(await create({ ...REACTOR, configuration: 'A=1' }), 'body.configuration');
    });

    it('requires the application to be a public or private application of the tenant', async () => {
      assertInvalid(await create({ ...REACTOR, application: { id: managementId } }), 'body.application.id', /public or private/);
      assertInvalid(await create({ ...REACTOR, application: { id: randomUUID() } }), 'body.application.id');
      assertInvalid(await create({ ...REACTOR, application: { id: 'not-a-uuid' } }), 'body.application.id');
      assertInvalid(await create({ ...REACTOR, application: {} }), 'body.application.id');
      // The other tenant's own management key is enough to create a private application there.
      const foreign = await call(server, 'POST', '/applications', { key: other.api_key, body: { name: 'theirs', type: 'private', permissions: ['token:use'], create_key: false } });
      assert.equal(foreign.status, 201, foreign.text);
      assertInvalid(await create({ ...REACTOR, application: { id: foreign.body.id } }), 'body.application.id');
      const list = await call(server, 'GET', `/reactors?size=100`, { key: server.key });
      assert.ok(!list.body.data.some((r: any) => r.application?.id === foreign.body.id || r.application?.id === managementId), 'nothing was created');
    });

    it('refuses a member a reactor does not have, such as the proxies\' application_id, instead of dropping it', async () => {
      assertInvalid(await create({ ...REACTOR, application_id: managementId }), 'body.application_id');
      assertInvalid(await create({ ...REACTOR, application: { id: managementId, name: 'x' } }), 'body.application.name');
    });

    it('reports every invalid field at once', async () => {
      const res = await create({ name: 'n'.repeat(201), code: 'module.exports = (', configuration: { A: 2 } });
      assert.equal(res.status, 400, res.text);
      assert.ok(res.body.errors['body.name'] && res.body.errors['body.configuration.A'], res.text);
    });

    it('requires reactor:create', async () => {
      await assertAuthCases(server, { method: 'POST', path: '/reactors', permissions: ['reactor:create'], type: 'management', body: REACTOR });
      const res = await create(REACTOR, privateApp.key);
      assert.equal(res.status, 403, 'a private key may not create reactors');
    });
  });

  describe('GET /reactors/{id}', () => {
    it('answers 404 for an unknown id and 400 for a malformed one', async () => {
      assertNotFound(await call(server, 'GET', `/reactors/${randomUUID()}`, { key: server.key }));
      assertInvalid(await call(server, 'GET', `/reactors/not-a-uuid`, { key: server.key }), 'params.id');
    });

    it('requires reactor:read', async () => {
      const r = await created();
      await assertAuthCases(server, { method: 'GET', path: `/reactors/${r.id}`, permissions: ['reactor:read'], type: 'management' });
    });

    it('shows an application that was deleted as none', async () => {
      const app = await createApplication(server, { name: 'short-lived', type: 'private', permissions: ['token:use'] });
      const r = await created({ ...REACTOR, application: { id: app.id } });
      assert.equal((await call(server, 'DELETE', `/applications/${app.id}`, { key: server.key })).status, 204);
      const got = await call(server, 'GET', `/reactors/${r.id}`, { key: server.key });
      assert.equal(got.status, 200, got.text);
      assert.equal(got.body.application, undefined);
    });
  });

  describe('GET /reactors', () => {
    let names: Record<string, string>;

    before(async () => {
      // A tag unique to this suite keeps the filters below from matching other tests' reactors.
      const tag = randomUUID().slice(0, 8);
      names = {
        alpha: `alpha-${tag}-payments`,
        alphaTwo: `alpha-${tag}-refunds`,
        beta: `beta-${tag}-payments`,
        odd: `odd_${tag}%name`,
      };
      for (const name of Object.values(names)) await created({ ...REACTOR, name });
    });

    const list = async (query: string, key = server.key) => {
      const res = await call(server, 'GET', `/reactors${query}`, { key });
      assert.equal(res.status, 200, res.text);
      return res.body as { pagination: { total_items: number; page_number: number; page_size: number; total_pages: number }; data: any[] };
    };
    const tagOf = () => names.alpha.split('-')[1];

    it('pages through every reactor of the tenant, oldest first', async () => {
      const all = await list('?size=100');
      assert.equal(all.pagination.total_items, all.data.length);
      assert.equal(all.pagination.page_number, 1);
      assert.equal(all.pagination.page_size, 100);
      assert.ok(all.data.every((r) => r.tenant_id === server.tenantId));
      const times = all.data.map((r) => Date.parse(r.created_at));
      assert.deepEqual(times, [...times].sort((a, b) => a - b));

      const first = await list('?size=2&page=1');
      const second = await list('?size=2&page=2');
      assert.equal(first.data.length, 2);
      assert.equal(first.pagination.total_items, all.pagination.total_items);
      assert.equal(first.pagination.total_pages, Math.ceil(all.pagination.total_items / 2));
      assert.deepEqual([...first.data, ...second.data].map((r) => r.id), all.data.slice(0, 4).map((r) => r.id));
      const beyond = await list(`?size=2&page=${first.pagination.total_pages + 1}`);
      assert.deepEqual(beyond.data, []);
      assert.equal(beyond.pagination.total_items, all.pagination.total_items);
    });

    it('defaults to 20 per page and refuses more than 100', async () => {
      assert.equal((await list('')).pagination.page_size, 20);
      assertInvalid(await call(server, 'GET', '/reactors?size=101', { key: server.key }), 'query.size');
      assertInvalid(await call(server, 'GET', '/reactors?page=0', { key: server.key }), 'query.page');
    });

    it('filters by a name wildcard', async () => {
      const tag = tagOf();
      const starts = await list(`?name=${encodeURIComponent(`alpha-${tag}*`)}`);
      assert.deepEqual(starts.data.map((r) => r.name).sort(), [names.alpha, names.alphaTwo]);
      assert.equal(starts.pagination.total_items, 2);

      const ends = await list(`?name=${encodeURIComponent(`*${tag}-payments`)}`);
      assert.deepEqual(ends.data.map((r) => r.name).sort(), [names.alpha, names.beta]);

      const middle = await list(`?name=${encodeURIComponent(`alpha-*-refunds`)}`);
      assert.ok(middle.data.some((r) => r.name === names.alphaTwo));
      assert.ok(middle.data.every((r) => /^alpha-.*-refunds$/.test(r.name)));

      const exact = await list(`?name=${encodeURIComponent(names.beta)}`);
      assert.deepEqual(exact.data.map((r) => r.name), [names.beta]);
    });

    it('without a *, matches a substring, case-insensitively', async () => {
      const tag = tagOf();
      const sub = await list(`?name=${encodeURIComponent(`${tag}-pay`)}`);
      assert.deepEqual(sub.data.map((r) => r.name).sort(), [names.alpha, names.beta]);
      const upper = await list(`?name=${encodeURIComponent(`BETA-${tag.toUpperCase()}`)}`);
      assert.deepEqual(upper.data.map((r) => r.name), [names.beta]);
    });

    it('takes a name filter of 1 to 200 characters', async () => {
      assert.deepEqual((await list(`?name=${'x'.repeat(200)}`)).data, []);
      assertInvalid(await call(server, 'GET', `/reactors?name=${'x'.repeat(201)}`, { key: server.key }), 'query.name');
      assertInvalid(await call(server, 'GET', `/reactors?name=`, { key: server.key }), 'query.name');
    });

    it('treats % and _ in the name as plain characters', async () => {
      const tag = tagOf();
      assert.deepEqual((await list(`?name=${encodeURIComponent(`_${tag}%`)}`)).data.map((r) => r.name), [names.odd]);
      assert.deepEqual((await list(`?name=${encodeURIComponent(`%`)}`)).data.map((r) => r.name), [names.odd]);
      assert.deepEqual((await list(`?name=${encodeURIComponent(`alpha_${tag}`)}`)).data, [], '_ is not a one-character wildcard');
    });

    it('filters by id, one or several', async () => {
      const all = (await list('?size=100')).data;
      const [a, b] = [all[0], all[2]];
      const one = await list(`?id=${a.id}`);
      assert.deepEqual(one.data.map((r) => r.id), [a.id]);
      assert.equal(one.pagination.total_items, 1);
      const two = await list(`?id=${a.id}&id=${b.id}`);
      assert.deepEqual(two.data.map((r) => r.id).sort(), [a.id, b.id].sort());
      const unknown = await list(`?id=${randomUUID()}`);
      assert.deepEqual(unknown.data, []);
      assert.equal(unknown.pagination.total_items, 0);
      assertInvalid(await call(server, 'GET', `/reactors?id=nope`, { key: server.key }), 'query.id[0]');
      const many = Array.from({ length: 101 }, () => `id=${randomUUID()}`).join('&');
      assertInvalid(await call(server, 'GET', `/reactors?${many}`, { key: server.key }), 'query.id');
      assert.equal((await list(`?${Array.from({ length: 100 }, () => `id=${randomUUID()}`).join('&')}`)).pagination.total_items, 0);
    });

    it('combines the id and name filters', async () => {
      const all = (await list('?size=100')).data;
      const alpha = all.find((r) => r.name === names.alpha)!;
      const beta = all.find((r) => r.name === names.beta)!;
      const both = await list(`?id=${alpha.id}&id=${beta.id}&name=alpha`);
      assert.deepEqual(both.data.map((r) => r.id), [alpha.id]);
    });

    it('never lists another tenant\'s reactors', async () => {
      const theirs = await call(server, 'POST', '/reactors', { key: other.api_key, body: { ...REACTOR, name: `theirs-${tagOf()}` } });
      assert.equal(theirs.status, 201, theirs.text);
      const mine = await list(`?size=100`);
      assert.ok(!mine.data.some((r) => r.id === theirs.body.id));
      assert.deepEqual((await list(`?id=${theirs.body.id}`)).data, []);
      assert.deepEqual((await list(`?name=theirs-${tagOf()}`)).data, []);
      const theirList = await call(server, 'GET', '/reactors?size=100', { key: other.api_key });
      assert.deepEqual(theirList.body.data.map((r: any) => r.id), [theirs.body.id]);
    });

    it('requires reactor:read', async () => {
      await assertAuthCases(server, { method: 'GET', path: '/reactors', permissions: ['reactor:read'], type: 'management' });
    });
  });

  describe('PUT /reactors/{id}', () => {
    it('replaces every field and records who changed it', async () => {
      const r = await created({ ...REACTOR, application: { id: privateApp.id } });
      const before = Date.now();
      const res = await call(server, 'PUT', `/reactors/${r.id}`, {
        key: server.key,
        body: { name: 'renamed', code: CODE.replace('hello', 'hey'), configuration: { GREETING: 'yo', OTHER: 'x' }, application: { id: publicApp.id } },
      });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.id, r.id);
      assert.equal(res.body.name, 'renamed');
      assert.match(res.body.code, /hey/);
      assert.deepEqual(res.body.configuration, { GREETING: 'yo', OTHER: 'x' });
      assert.deepEqual(res.body.application, { id: publicApp.id, name: 'reactor browser', type: 'public' });
      assert.equal(res.body.created_at, r.created_at);
      assert.equal(res.body.created_by, managementId);
      assert.equal(res.body.modified_by, managementId);
      assert.ok(Date.parse(res.body.modified_at) >= before - 1000);
      assert.deepEqual((await call(server, 'GET', `/reactors/${r.id}`, { key: server.key })).body, res.body);
    });

    it('removes the application when it is left out', async () => {
      const r = await created({ ...REACTOR, application: { id: privateApp.id } });
      const res = await call(server, 'PUT', `/reactors/${r.id}`, { key: server.key, body: REACTOR });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.application, undefined);
    });

    it('validates like create, and changes nothing when invalid', async () => {
      const r = await created();
      const put = (body: unknown) => call(server, 'PUT', `/reactors/${r.id}`, { key: server.key, body });
      assertInvalid(await put({ ...REACTOR, name: 'n'.repeat(201) }), 'body.name');
      assertInvalid(await put({ ...REACTOR, code: 'module.exports = async () => {\n\n  return {;\n};' }), 'body.code', /line 3/);
      assertInvalid(await put({ ...REACTOR, configuration: { A: true } }), 'body.configuration.A');
      assertInvalid(await put({ name: 'x', code: CODE }), 'body.configuration');
      assertInvalid(await put({ ...REACTOR, application: { id: managementId } }), 'body.application.id');
      assertInvalid(await put({ ...REACTOR, application: { id: randomUUID() } }), 'body.application.id');
      const got = await call(server, 'GET', `/reactors/${r.id}`, { key: server.key });
      assert.deepEqual(got.body, r);
    });

    it('answers 404 for an unknown id', async () => {
      assertNotFound(await call(server, 'PUT', `/reactors/${randomUUID()}`, { key: server.key, body: REACTOR }));
    });

    it('requires reactor:update', async () => {
      const r = await created();
      await assertAuthCases(server, { method: 'PUT', path: `/reactors/${r.id}`, permissions: ['reactor:update'], type: 'management', body: REACTOR });
    });
  });

  describe('PATCH /reactors/{id}', () => {
    it('applies a merge patch and answers 204 with no body', async () => {
      const r = await created({ ...REACTOR, configuration: { GREETING: 'hi', KEEP: 'k' }, application: { id: privateApp.id } });
      const res = await patch(r.id, { name: 'patched' });
      assert.equal(res.status, 204, res.text);
      assert.equal(res.text, '');
      const got = (await call(server, 'GET', `/reactors/${r.id}`, { key: server.key })).body;
      assert.equal(got.name, 'patched');
      assert.equal(got.code, r.code);
      assert.deepEqual(got.configuration, r.configuration);
      assert.deepEqual(got.application, r.application);
      assert.equal(got.modified_by, managementId);
      assert.ok(got.modified_at);
    });

    it('merges configuration as RFC 7386 says: keys are added, replaced, and removed by null', async () => {
      const r = await created({ ...REACTOR, configuration: { GREETING: 'hi', KEEP: 'k', DROP: 'd' } });
      const res = await patch(r.id, { configuration: { GREETING: 'hello', NEW: 'n', DROP: null } });
      assert.equal(res.status, 204, res.text);
      const got = (await call(server, 'GET', `/reactors/${r.id}`, { key: server.key })).body;
      assert.deepEqual(got.configuration, { GREETING: 'hello', KEEP: 'k', NEW: 'n' });
    });

    it('concurrent patches each apply to the one before: none is lost', async () => {
      const r = await created({ ...REACTOR, configuration: {} });
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => patch(r.id, { configuration: { [`K${i}`]: String(i) } })));
      for (const res of results) assert.equal(res.status, 204, res.text);
      const got = (await call(server, 'GET', `/reactors/${r.id}`, { key: server.key })).body;
      assert.deepEqual(got.configuration, Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`K${i}`, String(i)])));
    });

    it('sets and removes the application', async () => {
      const r = await created();
      assert.equal((await patch(r.id, { application: { id: publicApp.id } })).status, 204);
      assert.equal((await call(server, 'GET', `/reactors/${r.id}`, { key: server.key })).body.application.id, publicApp.id);
      assert.equal((await patch(r.id, { application: null })).status, 204);
      assert.equal((await call(server, 'GET', `/reactors/${r.id}`, { key: server.key })).body.application, undefined);
    });

    it('accepts an empty patch', async () => {
      const r = await created();
      assert.equal((await patch(r.id, {})).status, 204);
      const got = (await call(server, 'GET', `/reactors/${r.id}`, { key: server.key })).body;
      assert.deepEqual({ ...got, modified_at: undefined, modified_by: undefined }, { ...r, modified_at: undefined, modified_by: undefined });
    });

    it('needs Content-Type application/merge-patch+json: application/json is a 415', async () => {
      const r = await created();
      const res = await call(server, 'PATCH', `/reactors/${r.id}`, { key: server.key, body: { name: 'json' } });
      assert.equal(res.status, 415, res.text);
      assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
      assert.equal((await call(server, 'GET', `/reactors/${r.id}`, { key: server.key })).body.name, r.name);
    });

    it('validates the merged reactor and changes nothing when invalid', async () => {
      const r = await created({ ...REACTOR, application: { id: privateApp.id } });
      assertInvalid(await patch(r.id, { name: 'n'.repeat(201) }), 'body.name');
      assertInvalid(await patch(r.id, { name: null }), 'body.name');
      assertInvalid(await patch(r.id, { code: 'module.exports = async () => {\n  retur n 1;\n};' }), 'body.code', /line 2/);
      assertInvalid(await patch(r.id, { code: null }), 'body.code');
      assertInvalid(await patch(r.id, { configuration: { A: 5 } }), 'body.configuration.A');
      assertInvalid(await patch(r.id, { configuration: 'x' }), 'body.configuration');
      assertInvalid(await patch(r.id, { application: { id: managementId } }), 'body.application.id');
      assertInvalid(await patch(r.id, { application: { id: randomUUID() } }), 'body.application.id');
      assertInvalid(await patch(r.id, { unknown_field: 1 }), 'body.unknown_field');
      const bad = await call(server, 'PATCH', `/reactors/${r.id}`, { key: server.key, raw: '{"name":', contentType: MERGE });
      assertInvalid(bad, 'body');
      assert.deepEqual((await call(server, 'GET', `/reactors/${r.id}`, { key: server.key })).body, r);
    });

    it('answers 404 for an unknown id', async () => {
      assertNotFound(await patch(randomUUID(), { name: 'x' }));
    });

    it('requires reactor:update', async () => {
      const r = await created();
      await assertAuthCases(server, { method: 'PATCH', path: `/reactors/${r.id}`, permissions: ['reactor:update'], type: 'management', body: { name: 'x' }, contentType: MERGE });
    });
  });

  describe('DELETE /reactors/{id}', () => {
    it('deletes the reactor: it can no longer be read, changed or invoked', async () => {
      const r = await created();
      assert.equal((await react(r.id)).status, 200, 'invoked once, so the invocation cache holds it');
      const res = await call(server, 'DELETE', `/reactors/${r.id}`, { key: server.key });
      assert.equal(res.status, 204, res.text);
      assert.equal(res.text, '');
      assertNotFound(await call(server, 'GET', `/reactors/${r.id}`, { key: server.key }));
      assertNotFound(await call(server, 'PUT', `/reactors/${r.id}`, { key: server.key, body: REACTOR }));
      assertNotFound(await patch(r.id, { name: 'x' }));
      assertNotFound(await react(r.id));
      assertNotFound(await call(server, 'POST', `/reactors/${r.id}/react-async`, { key: useKey, body: {} }));
      assertNotFound(await call(server, 'DELETE', `/reactors/${r.id}`, { key: server.key }));
    });

    it('requires reactor:delete', async () => {
      const r = await created();
      await assertAuthCases(server, { method: 'DELETE', path: `/reactors/${r.id}`, permissions: ['reactor:delete'], type: 'management' });
      assert.equal((await call(server, 'GET', `/reactors/${r.id}`, { key: server.key })).status, 200, 'still there');
    });
  });

  describe('tenant isolation', () => {
    it('answers 404 on every route for another tenant\'s reactor', async () => {
      const theirs = await call(server, 'POST', '/reactors', { key: other.api_key, body: REACTOR });
      assert.equal(theirs.status, 201, theirs.text);
      const id = theirs.body.id;
      assertNotFound(await call(server, 'GET', `/reactors/${id}`, { key: server.key }));
      assertNotFound(await call(server, 'PUT', `/reactors/${id}`, { key: server.key, body: REACTOR }));
      assertNotFound(await patch(id, { name: 'mine now' }));
      assertNotFound(await call(server, 'DELETE', `/reactors/${id}`, { key: server.key }));
      assertNotFound(await react(id));
      assertNotFound(await call(server, 'POST', `/reactors/${id}/react-async`, { key: useKey, body: {} }));
      assertNotFound(await call(server, 'GET', `/reactors/${id}/results/${randomUUID()}`, { key: useKey }));
      const still = await call(server, 'GET', `/reactors/${id}`, { key: other.api_key });
      assert.equal(still.status, 200);
      assert.deepEqual(still.body, theirs.body, 'untouched');
    });
  });

  describe('the audit log', () => {
    it('records create, update (PUT and PATCH) and delete', async () => {
      const r = await created();
      await call(server, 'PUT', `/reactors/${r.id}`, { key: server.key, body: { ...REACTOR, name: 'v2' } });
      await patch(r.id, { name: 'v3' });
      await call(server, 'DELETE', `/reactors/${r.id}`, { key: server.key });
      const res = await call(server, 'GET', `/logs?entity_type=reactor&entity_id=${r.id}`, { key: server.key });
      assert.equal(res.status, 200, res.text);
      const entries = res.body.data as any[];
      assert.deepEqual(entries.map((e) => e.operation).sort(), ['create', 'delete', 'update', 'update']);
      for (const e of entries) {
        assert.equal(e.actor_id, managementId);
        assert.equal(e.entity_type, 'reactor');
        assert.equal(e.entity_id, r.id);
      }
    });
  });

  describe('an asynchronous run accepted but not yet run (no workers)', () => {
    it('is pending, already recorded as reactor.invoked with its request id, and queued as a reactor.run job', async () => {
      const r = await created();
      const res = await call(server, 'POST', `/reactors/${r.id}/react-async`, { key: useKey, body: { args: { a: 1 } } });
      assert.equal(res.status, 202, res.text);
      const requestId = res.body.asyncReactorRequestId;
      assert.match(requestId, UUID);

      const pending = await call(server, 'GET', `/reactors/${r.id}/results/${requestId}`, { key: useKey });
      assert.equal(pending.status, 202, pending.text);
      assert.deepEqual(pending.body, { status: 'pending' });

      const events = (await sql.query(`SELECT type, payload FROM events WHERE tenant_id = $1 AND entity_id = $2 ORDER BY id`, [server.tenantId, r.id])).rows;
      assert.deepEqual(events, [{ type: 'reactor.invoked', payload: { reactor_id: r.id, request_id: requestId } }]);
      const jobs = (await sql.query(`SELECT kind, status, tenant_id FROM jobs WHERE payload->>'request_id' = $1`, [requestId])).rows;
      assert.deepEqual(jobs, [{ kind: 'reactor.run', status: 'pending', tenant_id: server.tenantId }]);
    });
  });

  describe('warm isolates are per reactor version', () => {
    it('runs the new code right after PUT or PATCH changes it', async () => {
      const version = (v: number) => `module.exports = async () => ({ raw: { version: ${v} } });`;
      const r = await created({ ...REACTOR, code: version(1) });
      for (let i = 0; i < 3; i++) assert.deepEqual((await react(r.id)).body, { raw: { version: 1 } });

      const put = await call(server, 'PUT', `/reactors/${r.id}`, { key: server.key, body: { ...REACTOR, code: version(2) } });
      assert.equal(put.status, 200, put.text);
      assert.deepEqual((await react(r.id)).body, { raw: { version: 2 } });

      assert.equal((await patch(r.id, { code: version(3) })).status, 204);
      assert.deepEqual((await react(r.id)).body, { raw: { version: 3 } });
    });

    it('under an idempotency key too, a PUT or PATCH answers only once every other process has dropped the old reactor', async () => {
      // Another process on the database, played by a listener that is slow to catch up: it
      // acknowledges the change's barrier only after 300 ms, having read the change notice.
      const member = `test${randomUUID().slice(0, 8)}`;
      const other = new pg.Client({ connectionString: server.config.databaseUrl });
      await other.connect();
      const seen: string[] = [];
      let ackedAt = 0;
      other.on('notification', (msg) => {
        const payload = msg.payload ?? '';
        if (!payload.startsWith('barrier:')) return void seen.push(payload);
        const [sender, nonce] = payload.slice('barrier:'.length).split(':');
        setTimeout(() => {
          ackedAt = Date.now();
          void other.query('SELECT pg_notify($1, $2)', [`coffer_ack_${sender}`, `${nonce}:${member}`]);
        }, 300);
      });
      try {
        await other.query('LISTEN coffer_invalidate');
        await other.query(`SELECT pg_notify('coffer_invalidate', $1)`, [`member:${member}`]);
        // The server answers a newcomer with its own announcement: it knows of the member now.
        await until(() => seen.some((p) => p.startsWith('member:') && p !== `member:${member}`), 'the server to learn of the member');
        const r = await created();
        const changes = [
          () => call(server, 'PUT', `/reactors/${r.id}`, { key: server.key, body: { ...REACTOR, name: 'v2' }, headers: { 'svc-idempotency-key': randomUUID() } }),
          () => call(server, 'PATCH', `/reactors/${r.id}`, { key: server.key, body: { name: 'v3' }, contentType: MERGE, headers: { 'svc-idempotency-key': randomUUID() } }),
        ];
        for (const change of changes) {
          ackedAt = 0;
          const res = await change();
          const answeredAt = Date.now();
          assert.ok([200, 204].includes(res.status), res.text);
          assert.ok(ackedAt > 0 && ackedAt <= answeredAt, 'answered only after the other process acknowledged');
          assert.ok(seen.includes('reactor'), 'which had read the change notice');
        }
      } finally {
        await other.query(`SELECT pg_notify('coffer_invalidate', $1)`, [`leave:${member}`]).catch(() => {});
        await other.end();
      }
    });

    it('passes the new configuration right after it changes', async () => {
      const r = await created();
      assert.deepEqual((await react(r.id)).body, { raw: { hello: 'hi' } });
      assert.equal((await patch(r.id, { configuration: { GREETING: 'bonjour' } })).status, 204);
      assert.deepEqual((await react(r.id)).body, { raw: { hello: 'bonjour' } });
    });

    it('may keep module state between runs of one version (warm), never into the next version or another reactor', async () => {
      const code = `let calls = 0; module.exports = async () => ({ raw: { n: ++calls } });`;
      const r = await created({ ...REACTOR, code });
      assert.deepEqual((await react(r.id)).body, { raw: { n: 1 } });
      assert.deepEqual((await react(r.id)).body, { raw: { n: 2 } }, 'the warm context of this version');
      const other = await created({ ...REACTOR, code });
      assert.deepEqual((await react(other.id)).body, { raw: { n: 1 } }, 'another reactor, same code: its own state');
      assert.equal((await patch(r.id, { configuration: { GREETING: 'changed' } })).status, 204);
      assert.deepEqual((await react(r.id)).body, { raw: { n: 1 } }, 'a new version starts clean');
    });
  });
});
