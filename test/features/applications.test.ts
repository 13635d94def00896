import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { call, createApplication, createOtherTenant, type Response } from '../helpers/http.ts';
import { assertAuthCases } from '../helpers/security.ts';
import { queryOnce, rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';

/** A private application body that passes validation; cases below break one thing at a time. */
const PRIVATE_APP = { name: 'backend', type: 'private', rules: [{ priority: 1, container: '/pci/', permissions: ['token:read'] }] };
/** The same as an update: a PUT takes no type (nor expiry), which are fixed at creation. */
const PRIVATE_UPDATE = { name: PRIVATE_APP.name, rules: PRIVATE_APP.rules };

/** A 400 problem whose `errors` names the field; the request must not have been half-applied. */
function assertInvalid(res: Response, field: string): void {
  assert.equal(res.status, 400, `expected 400 for ${field}, got ${res.status} ${res.text}`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.equal(res.body.status, 400);
  assert.ok(res.body.errors?.[field], `errors should name ${field}: ${JSON.stringify(res.body.errors)}`);
  assert.ok(res.body.errors[field].length > 0);
}

function assertNotFound(res: Response): void {
  assert.equal(res.status, 404, res.text);
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.equal(res.body.status, 404);
}

describe('applications', () => {
  let server: TestServer;
  /** The id of the tenant's management application, the actor of every change made with server.key. */
  let managementId: string;

  before(async () => {
    // No background sweeper: the expiry test decides when the sweep runs.
    server = await startTestServer({ WORKERS: '0' });
    const self = await call(server, 'GET', '/applications/key', { key: server.key });
    managementId = self.body.id;
  });
  after(() => server.stop());

  async function create(body: Record<string, unknown>, key = server.key): Promise<Response> {
    const res = await call(server, 'POST', '/applications', { key, body });
    if (typeof res.body?.key === 'string') rememberSecret(res.body.key);
    return res;
  }

  async function eventsOf(entityId: string): Promise<{ operation: string; actor_id: string | null; actor_type: string | null; entity_type: string }[]> {
    const res = await call(server, 'GET', `/logs?entity_type=application&entity_id=${entityId}&size=100`, { key: server.key });
    assert.equal(res.status, 200, res.text);
    return res.body.data;
  }

  describe('POST /applications', () => {
    it('creates an application with a key that authenticates as it', async () => {
      const res = await create({ name: 'admin tool', type: 'management', permissions: ['application:read', 'log:read'] });
      assert.equal(res.status, 201, res.text);
      const app = res.body;
      assert.match(app.id, /^[0-9a-f-]{36}$/);
      assert.equal(app.tenant_id, server.tenantId);
      assert.equal(app.name, 'admin tool');
      assert.equal(app.type, 'management');
      assert.deepEqual(app.permissions, ['application:read', 'log:read']);
      assert.deepEqual(app.rules, []);
      assert.equal(app.created_by, managementId);
      assert.ok(!Number.isNaN(Date.parse(app.created_at)));
      assert.equal(app.expires_at, undefined);
      assert.equal(typeof app.key, 'string');
      assert.equal(app.keys.length, 1);
      assert.equal(app.keys[0].tenant_id, server.tenantId);
      assert.equal(app.keys[0].key, undefined, 'the keys list never carries a value');

      const self = await call(server, 'GET', '/applications/key', { key: app.key });
      assert.equal(self.status, 200, self.text);
      assert.equal(self.body.id, app.id);
      assert.deepEqual(self.body.keys.map((k: { id: string }) => k.id), [app.keys[0].id]);
      assert.equal(self.body.key, undefined, 'the key value is shown only on creation');
    });

    it('creates no key when create_key is false', async () => {
      const res = await create({ ...PRIVATE_APP, create_key: false });
      assert.equal(res.status, 201, res.text);
      assert.equal('key' in res.body, false);
      assert.deepEqual(res.body.keys, []);
      const got = await call(server, 'GET', `/applications/${res.body.id}`, { key: server.key });
      assert.deepEqual(got.body.keys, []);
    });

    it('returns rules sorted by priority, with transform defaulting to redact', async () => {
      const res = await create({
        name: 'rules',
        type: 'private',
        rules: [
          { priority: 5, container: '/general/', permissions: ['token:use'], description: 'use' },
          { priority: 1, container: '/pci/high/', permissions: ['token:read'], transform: 'reveal' },
          { priority: 3, container: '/bank/', permissions: ['token:read', 'token:create'], transform: 'mask' },
        ],
      });
      assert.equal(res.status, 201, res.text);
      const expected = [
        { priority: 1, container: '/pci/high/', transform: 'reveal', permissions: ['token:read'] },
        { priority: 3, container: '/bank/', transform: 'mask', permissions: ['token:read', 'token:create'] },
        { description: 'use', priority: 5, container: '/general/', transform: 'redact', permissions: ['token:use'] },
      ];
      assert.deepEqual(res.body.rules, expected);
      const got = await call(server, 'GET', `/applications/${res.body.id}`, { key: server.key });
      assert.deepEqual(got.body.rules, expected);
    });

    it('accepts rules without a container on a management application', async () => {
      const res = await create({ name: 'by rule', type: 'management', rules: [{ priority: 1, permissions: ['application:read'] }] });
      assert.equal(res.status, 201, res.text);
      assert.deepEqual(res.body.permissions, []);
      // The rule's permission is what lets the key through.
      const self = await call(server, 'GET', '/applications/key', { key: res.body.key });
      assert.equal(self.status, 200, self.text);
    });

    it('accepts a public application with permissions that fit it', async () => {
      const res = await create({ name: 'browser', type: 'public', permissions: ['token:create'] });
      assert.equal(res.status, 201, res.text);
      assert.equal(res.body.type, 'public');
    });

    it('accepts the last instant of year 9999 as expires_at, in any offset that names it', async () => {
      const res = await create({ ...PRIVATE_APP, expires_at: '9999-12-31T22:59:59.999-01:00' });
      assert.equal(res.status, 201, res.text);
      assert.equal(res.body.expires_at, '9999-12-31T23:59:59.999Z');
    });

    it('accepts a name of exactly 200 characters and stores expires_at', async () => {
      const expires = new Date(Date.now() + 3_600_000).toISOString();
      const res = await create({ ...PRIVATE_APP, name: 'n'.repeat(200), expires_at: expires });
      assert.equal(res.status, 201, res.text);
      assert.equal(res.body.name, 'n'.repeat(200));
      assert.equal(res.body.expires_at, expires);
    });

    const invalid: { what: string; body: unknown; field: string }[] = [
      { what: 'a missing name', body: { type: 'private', rules: PRIVATE_APP.rules }, field: 'body.name' },
      { what: 'an empty name', body: { ...PRIVATE_APP, name: '' }, field: 'body.name' },
      { what: 'a name of 201 characters', body: { ...PRIVATE_APP, name: 'n'.repeat(201) }, field: 'body.name' },
      { what: 'a name that is a number (never coerced)', body: { ...PRIVATE_APP, name: 123 }, field: 'body.name' },
      { what: 'a missing type', body: { name: 'x', permissions: ['token:create'] }, field: 'body.type' },
      { what: 'an unknown type', body: { ...PRIVATE_APP, type: 'admin' }, field: 'body.type' },
      { what: 'permissions that are not an array', body: { name: 'x', type: 'management', permissions: 'application:read' }, field: 'body.permissions' },
      { what: 'create_key as a string', body: { ...PRIVATE_APP, create_key: 'false' }, field: 'body.create_key' },
      { what: 'empty permissions and rules', body: { name: 'x', type: 'management', permissions: [], rules: [] }, field: 'body.permissions' },
      { what: 'neither permissions nor rules', body: { name: 'x', type: 'private' }, field: 'body.permissions' },
      { what: 'an unknown permission', body: { name: 'x', type: 'management', permissions: ['application:read', 'application:fly'] }, field: 'body.permissions[1]' },
      { what: 'a private permission on a management application', body: { name: 'x', type: 'management', permissions: ['token:read'] }, field: 'body.permissions[0]' },
      { what: 'a management permission on a private application', body: { name: 'x', type: 'private', permissions: ['application:create'] }, field: 'body.permissions[0]' },
      { what: 'a private-only permission on a public application', body: { name: 'x', type: 'public', permissions: ['token:read'] }, field: 'body.permissions[0]' },
      { what: 'duplicate permissions', body: { name: 'x', type: 'management', permissions: ['log:read', 'log:read'] }, field: 'body.permissions' },
      { what: 'a rule permission not fitting the type', body: { name: 'x', type: 'private', rules: [{ priority: 1, container: '/pci/', permissions: ['proxy:read'] }] }, field: 'body.rules[0].permissions[0]' },
      { what: 'a rule without permissions', body: { name: 'x', type: 'private', rules: [{ priority: 1, container: '/pci/', permissions: [] }] }, field: 'body.rules[0].permissions' },
      { what: 'rule priority 0', body: { name: 'x', type: 'private', rules: [{ priority: 0, container: '/pci/', permissions: ['token:read'] }] }, field: 'body.rules[0].priority' },
      { what: 'a fractional rule priority', body: { name: 'x', type: 'private', rules: [{ priority: 1.5, container: '/pci/', permissions: ['token:read'] }] }, field: 'body.rules[0].priority' },
      {
        what: 'duplicate rule priorities',
        body: { name: 'x', type: 'private', rules: [{ priority: 2, container: '/pci/', permissions: ['token:read'] }, { priority: 2, container: '/bank/', permissions: ['token:read'] }] },
        field: 'body.rules[1].priority',
      },
      { what: 'an unknown transform', body: { name: 'x', type: 'private', rules: [{ priority: 1, container: '/pci/', transform: 'encrypt', permissions: ['token:read'] }] }, field: 'body.rules[0].transform' },
      { what: 'a private rule without container', body: { name: 'x', type: 'private', rules: [{ priority: 1, permissions: ['token:read'] }] }, field: 'body.rules[0].container' },
      { what: 'a public rule without container', body: { name: 'x', type: 'public', rules: [{ priority: 1, permissions: ['token:create'] }] }, field: 'body.rules[0].container' },
      // Public keys always redact: a rule saying otherwise would be shown as a promise no key keeps.
      { what: 'a public rule that reveals', body: { name: 'x', type: 'public', rules: [{ priority: 1, container: '/browser/', transform: 'reveal', permissions: ['token:create'] }] }, field: 'body.rules[0].transform' },
      { what: 'a public rule that masks', body: { name: 'x', type: 'public', rules: [{ priority: 1, container: '/browser/', transform: 'mask', permissions: ['token:create'] }] }, field: 'body.rules[0].transform' },
      { what: 'an unknown member', body: { ...PRIVATE_APP, key: 'mine' }, field: 'body.key' },
      { what: 'an unknown member of a rule', body: { name: 'x', type: 'private', rules: [{ priority: 1, container: '/pci/', transfrom: 'reveal', permissions: ['token:read'] }] }, field: 'body.rules[0].transfrom' },
      { what: 'a container without a leading slash', body: { name: 'x', type: 'private', rules: [{ priority: 1, container: 'pci/', permissions: ['token:read'] }] }, field: 'body.rules[0].container' },
      { what: 'a container in upper case', body: { name: 'x', type: 'private', rules: [{ priority: 1, container: '/PCI/', permissions: ['token:read'] }] }, field: 'body.rules[0].container' },
      { what: 'a container without a trailing slash', body: { name: 'x', type: 'private', rules: [{ priority: 1, container: '/pci', permissions: ['token:read'] }] }, field: 'body.rules[0].container' },
      {
        what: 'a rule with conditions (only sessions have them)',
        body: { name: 'x', type: 'private', rules: [{ priority: 1, container: '/pci/', conditions: [{ attribute: 'container', operator: 'equals', value: '/pci/' }], permissions: ['token:read'] }] },
        field: 'body.rules[0].conditions',
      },
      {
        what: 'a management rule with conditions instead of a container',
        body: { name: 'x', type: 'management', rules: [{ priority: 1, conditions: [{ attribute: 'id', operator: 'equals', value: 'abc' }], permissions: ['log:read'] }] },
        field: 'body.rules[0].conditions',
      },
      { what: 'a management rule with a container', body: { name: 'x', type: 'management', rules: [{ priority: 1, container: '/pci/', permissions: ['log:read'] }] }, field: 'body.rules[0].container' },
      { what: 'expires_at in the past', body: { ...PRIVATE_APP, expires_at: new Date(Date.now() - 60_000).toISOString() }, field: 'body.expires_at' },
      { what: 'expires_at that is not a date-time', body: { ...PRIVATE_APP, expires_at: 'tomorrow' }, field: 'body.expires_at' },
      { what: 'expires_at as a date without a time', body: { ...PRIVATE_APP, expires_at: '2999-01-01' }, field: 'body.expires_at' },
      { what: 'expires_at on a leap second, which no timestamp can hold', body: { ...PRIVATE_APP, expires_at: '2999-12-31T23:59:60Z' }, field: 'body.expires_at' },
      { what: 'expires_at that an offset carries into year 10000', body: { ...PRIVATE_APP, expires_at: '9999-12-31T23:59:59-00:01' }, field: 'body.expires_at' },
    ];
    for (const c of invalid) {
      it(`rejects ${c.what} with 400 naming ${c.field}`, async () => {
        const res = await call(server, 'POST', '/applications', { key: server.key, body: c.body });
        assertInvalid(res, c.field);
      });
    }

    it('creates nothing when validation fails', async () => {
      const count = async () => (await call(server, 'GET', '/applications?size=1', { key: server.key })).body.pagination.total_items;
      const initial = await count();
      const res = await call(server, 'POST', '/applications', { key: server.key, body: { name: 'rejected', type: 'management', permissions: ['token:read'] } });
      assertInvalid(res, 'body.permissions[0]');
      assert.equal(await count(), initial);
    });

    it('reports every problem of a request at once', async () => {
      const res = await call(server, 'POST', '/applications', {
        key: server.key,
        body: { name: 'x', type: 'private', permissions: ['application:read'], rules: [{ priority: 1, container: 'bad', permissions: ['token:read'] }] },
      });
      assertInvalid(res, 'body.permissions[0]');
      assertInvalid(res, 'body.rules[0].container');
    });

    it('rejects a body that is not valid JSON', async () => {
      const res = await call(server, 'POST', '/applications', { key: server.key, raw: '{"name": "x",', contentType: 'application/json' });
      assertInvalid(res, 'body');
    });

    it('rejects a missing body', async () => {
      const res = await call(server, 'POST', '/applications', { key: server.key });
      assert.equal(res.status, 400, res.text);
      assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
    });

    it('requires application:create on a management key', async () => {
      await assertAuthCases(server, { method: 'POST', path: '/applications', permissions: ['application:create'], type: 'management', body: PRIVATE_APP });
    });
  });

  describe('GET /applications', () => {
    let ids: string[];
    before(async () => {
      ids = [];
      for (let i = 0; i < 3; i++) ids.push((await createApplication(server, { ...PRIVATE_APP, name: `listed ${i}` })).id);
    });

    it('returns the offset pagination object with page 1 and size 20 by default', async () => {
      const res = await call(server, 'GET', '/applications', { key: server.key });
      assert.equal(res.status, 200, res.text);
      const { pagination, data } = res.body;
      assert.equal(pagination.page_number, 1);
      assert.equal(pagination.page_size, 20);
      assert.ok(pagination.total_items >= 4, 'the management application and the three listed ones');
      assert.equal(pagination.total_pages, Math.ceil(pagination.total_items / 20));
      assert.equal(data.length, Math.min(20, pagination.total_items));
      assert.ok(data.some((a: { id: string }) => a.id === managementId));
      for (const a of data) {
        assert.equal(a.tenant_id, server.tenantId);
        assert.equal(a.key, undefined, 'listed applications never carry a key value');
      }
    });

    it('filters by repeated id parameters', async () => {
      const res = await call(server, 'GET', `/applications?id=${ids[0]}&id=${ids[2]}`, { key: server.key });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.pagination.total_items, 2);
      assert.deepEqual(res.body.data.map((a: { id: string }) => a.id).sort(), [ids[0], ids[2]].sort());
      assert.equal(res.body.data[0].keys.length, 1);
    });

    it('filters by a single id', async () => {
      const res = await call(server, 'GET', `/applications?id=${ids[1]}`, { key: server.key });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body.data.map((a: { id: string }) => a.id), [ids[1]]);
    });

    it('pages through the results without overlap', async () => {
      const filter = ids.map((id) => `id=${id}`).join('&');
      const first = await call(server, 'GET', `/applications?${filter}&size=2`, { key: server.key });
      const second = await call(server, 'GET', `/applications?${filter}&size=2&page=2`, { key: server.key });
      const third = await call(server, 'GET', `/applications?${filter}&size=2&page=3`, { key: server.key });
      assert.deepEqual(first.body.pagination, { total_items: 3, page_number: 1, page_size: 2, total_pages: 2 });
      assert.deepEqual(second.body.pagination, { total_items: 3, page_number: 2, page_size: 2, total_pages: 2 });
      assert.equal(first.body.data.length, 2);
      assert.equal(second.body.data.length, 1);
      assert.deepEqual(third.body.data, []);
      const seen = [...first.body.data, ...second.body.data].map((a: { id: string }) => a.id);
      assert.deepEqual([...seen].sort(), [...ids].sort());
    });

    it('accepts size 100 and rejects size 101, size 0 and page 0', async () => {
      assert.equal((await call(server, 'GET', '/applications?size=100', { key: server.key })).status, 200);
      assertInvalid(await call(server, 'GET', '/applications?size=101', { key: server.key }), 'query.size');
      assertInvalid(await call(server, 'GET', '/applications?size=0', { key: server.key }), 'query.size');
      assertInvalid(await call(server, 'GET', '/applications?page=0', { key: server.key }), 'query.page');
      assertInvalid(await call(server, 'GET', '/applications?page=abc', { key: server.key }), 'query.page');
    });

    it('rejects an id filter that is not a uuid', async () => {
      assertInvalid(await call(server, 'GET', '/applications?id=not-a-uuid', { key: server.key }), 'query.id[0]');
      assertInvalid(await call(server, 'GET', `/applications?id=${ids[0]}&id=nope`, { key: server.key }), 'query.id[1]');
    });

    it('lists only the caller\'s tenant', async () => {
      const other = await createOtherTenant(server);
      const theirs = await call(server, 'GET', `/applications?id=${ids[0]}&id=${other.application_id}`, { key: other.api_key });
      assert.deepEqual(theirs.body.data.map((a: { id: string }) => a.id), [other.application_id]);
      const ours = await call(server, 'GET', `/applications?id=${ids[0]}&id=${other.application_id}`, { key: server.key });
      assert.deepEqual(ours.body.data.map((a: { id: string }) => a.id), [ids[0]]);
      const all = await call(server, 'GET', '/applications?size=100', { key: other.api_key });
      assert.deepEqual(all.body.data.map((a: { id: string }) => a.id), [other.application_id]);
    });

    it('requires application:read', async () => {
      await assertAuthCases(server, { method: 'GET', path: '/applications', permissions: ['application:read'], type: 'management' });
    });
  });

  describe('GET /applications/{id}', () => {
    it('returns the application with its keys', async () => {
      const created = await createApplication(server, { ...PRIVATE_APP, name: 'fetched' });
      const res = await call(server, 'GET', `/applications/${created.id}`, { key: server.key });
      assert.equal(res.status, 200, res.text);
      const { key: _value, ...stored } = created;
      assert.deepEqual(res.body, stored);
    });

    it('answers 404 for an unknown id and 400 for a malformed one', async () => {
      assertNotFound(await call(server, 'GET', `/applications/${randomUUID()}`, { key: server.key }));
      assertInvalid(await call(server, 'GET', '/applications/not-a-uuid', { key: server.key }), 'params.id');
    });

    it('answers 404 across tenants, in both directions', async () => {
      const ours = await createApplication(server, { ...PRIVATE_APP, name: 'ours' });
      const other = await createOtherTenant(server);
      assertNotFound(await call(server, 'GET', `/applications/${ours.id}`, { key: other.api_key }));
      assertNotFound(await call(server, 'GET', `/applications/${other.application_id}`, { key: server.key }));
      // Each still sees its own.
      assert.equal((await call(server, 'GET', `/applications/${other.application_id}`, { key: other.api_key })).status, 200);
    });

    it('requires application:read', async () => {
      const target = await createApplication(server, PRIVATE_APP);
      await assertAuthCases(server, { method: 'GET', path: `/applications/${target.id}`, permissions: ['application:read'], type: 'management' });
    });
  });

  describe('GET /applications/key', () => {
    it('returns the application of the calling key', async () => {
      const res = await call(server, 'GET', '/applications/key', { key: server.key });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.id, managementId);
      assert.equal(res.body.type, 'management');
      assert.equal(res.body.tenant_id, server.tenantId);

      const other = await createApplication(server, { name: 'reader', type: 'management', permissions: ['application:read'] });
      const theirs = await call(server, 'GET', '/applications/key', { key: other.key });
      assert.equal(theirs.body.id, other.id);
      assert.notEqual(theirs.body.id, managementId);
    });

    it('answers, on every call, the same JSON as GET /applications/{id}', async () => {
      const byId = await call(server, 'GET', `/applications/${managementId}`, { key: server.key });
      for (let i = 0; i < 3; i++) {
        const res = await call(server, 'GET', '/applications/key', { key: server.key });
        assert.equal(res.status, 200);
        assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
        assert.equal(res.text, byId.text);
      }
    });

    it('requires application:read', async () => {
      await assertAuthCases(server, { method: 'GET', path: '/applications/key', permissions: ['application:read'], type: 'management' });
    });
  });

  describe('PUT /applications/{id}', () => {
    it('replaces name, permissions and rules and records who changed it', async () => {
      const created = await createApplication(server, { name: 'before', type: 'management', permissions: ['log:read'] });
      const res = await call(server, 'PUT', `/applications/${created.id}`, {
        key: server.key,
        body: { name: 'after', permissions: ['application:read'], rules: [{ priority: 2, permissions: ['proxy:read'] }, { priority: 1, permissions: ['reactor:read'], transform: 'mask' }] },
      });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.id, created.id);
      assert.equal(res.body.name, 'after');
      assert.equal(res.body.type, 'management');
      assert.deepEqual(res.body.permissions, ['application:read']);
      assert.deepEqual(res.body.rules, [
        { priority: 1, transform: 'mask', permissions: ['reactor:read'] },
        { priority: 2, transform: 'redact', permissions: ['proxy:read'] },
      ]);
      assert.equal(res.body.modified_by, managementId);
      assert.ok(Date.parse(res.body.modified_at) >= Date.parse(created.created_at as string));
      assert.equal(res.body.created_at, created.created_at);
      assert.deepEqual(res.body.keys, created.keys);
      assert.equal(res.body.key, undefined);

      const got = await call(server, 'GET', `/applications/${created.id}`, { key: server.key });
      assert.deepEqual(got.body, res.body);
    });

    it('replaces rather than merges: omitted permissions become empty', async () => {
      const created = await createApplication(server, { name: 'replace', type: 'management', permissions: ['log:read'] });
      const res = await call(server, 'PUT', `/applications/${created.id}`, { key: server.key, body: { name: 'replace', rules: [{ priority: 1, permissions: ['log:read'] }] } });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body.permissions, []);
      assert.equal(res.body.rules.length, 1);
    });

    it('validates against the stored type', async () => {
      const priv = await createApplication(server, PRIVATE_APP);
      const mgmt = await createApplication(server, { name: 'm', type: 'management', permissions: ['log:read'] });
      const put = (id: string, body: unknown) => call(server, 'PUT', `/applications/${id}`, { key: server.key, body });
      assertInvalid(await put(priv.id, { name: 'p', permissions: ['application:read'] }), 'body.permissions[0]');
      assertInvalid(await put(priv.id, { name: 'p', rules: [{ priority: 1, permissions: ['token:read'] }] }), 'body.rules[0].container');
      assertInvalid(await put(mgmt.id, { name: 'm', permissions: ['token:read'] }), 'body.permissions[0]');
      assertInvalid(await put(mgmt.id, { name: 'm', rules: [{ priority: 1, container: '/pci/', permissions: ['log:read'] }] }), 'body.rules[0].container');
      // Nor can a type in the body change the stored type: it is refused (below).
      const unchanged = await call(server, 'GET', `/applications/${priv.id}`, { key: server.key });
      assert.equal(unchanged.body.type, 'private');
      assert.deepEqual(unchanged.body.rules, [{ priority: 1, container: '/pci/', transform: 'redact', permissions: ['token:read'] }]);
    });

    it('rejects the same bad input as create', async () => {
      const target = await createApplication(server, PRIVATE_APP);
      const put = (body: unknown) => call(server, 'PUT', `/applications/${target.id}`, { key: server.key, body });
      assertInvalid(await put({ rules: PRIVATE_APP.rules }), 'body.name');
      assertInvalid(await put({ ...PRIVATE_APP, name: '' }), 'body.name');
      assertInvalid(await put({ ...PRIVATE_APP, name: 'n'.repeat(201) }), 'body.name');
      assertInvalid(await put({ ...PRIVATE_APP, name: 42 }), 'body.name');
      assertInvalid(await put({ name: 'x' }), 'body.permissions');
      assertInvalid(await put({ name: 'x', permissions: [], rules: [] }), 'body.permissions');
      assertInvalid(await put({ name: 'x', permissions: ['token:fly'] }), 'body.permissions[0]');
      assertInvalid(await put({ name: 'x', permissions: ['token:read', 'token:read'] }), 'body.permissions');
      assertInvalid(await put({ name: 'x', rules: [{ priority: 0, container: '/pci/', permissions: ['token:read'] }] }), 'body.rules[0].priority');
      assertInvalid(
        await put({ name: 'x', rules: [{ priority: 1, container: '/a/', permissions: ['token:read'] }, { priority: 1, container: '/b/', permissions: ['token:read'] }] }),
        'body.rules[1].priority',
      );
      assertInvalid(await put({ name: 'x', rules: [{ priority: 1, container: '/pci/', transform: 'show', permissions: ['token:read'] }] }), 'body.rules[0].transform');
      assertInvalid(await put({ name: 'x', rules: [{ priority: 1, container: '/PCI/', permissions: ['token:read'] }] }), 'body.rules[0].container');
      assertInvalid(
        await put({ name: 'x', rules: [{ priority: 1, container: '/pci/', conditions: [{ attribute: 'id', operator: 'equals', value: 'a' }], permissions: ['token:read'] }] }),
        'body.rules[0].conditions',
      );
      const res = await call(server, 'PUT', `/applications/${target.id}`, { key: server.key, raw: '{not json', contentType: 'application/json' });
      assertInvalid(res, 'body');
      const unchanged = await call(server, 'GET', `/applications/${target.id}`, { key: server.key });
      assert.equal(unchanged.body.name, PRIVATE_APP.name);
      assert.equal(unchanged.body.modified_at, undefined);
    });

    it('refuses members it cannot change (type, expires_at) or does not know, naming each, and changes nothing', async () => {
      const target = await createApplication(server, PRIVATE_APP);
      const update = { ...PRIVATE_UPDATE, name: 'renamed' };
      const expires = new Date(Date.now() + 3_600_000).toISOString();
      for (const [extra, field] of [[{ expires_at: expires }, 'body.expires_at'], [{ type: 'management' }, 'body.type'], [{ create_key: true }, 'body.create_key']] as const) {
        const res = await call(server, 'PUT', `/applications/${target.id}`, { key: server.key, body: { ...update, ...extra } });
        assertInvalid(res, field);
        assert.match(res.body.errors[field][0], /not a known property/);
      }
      const unchanged = await call(server, 'GET', `/applications/${target.id}`, { key: server.key });
      assert.equal(unchanged.body.name, PRIVATE_APP.name);
      assert.equal(unchanged.body.type, 'private');
      assert.equal(unchanged.body.expires_at, undefined);
      assert.equal(unchanged.body.modified_at, undefined);
    });

    it('refuses a public rule that is not redact, and takes one that is', async () => {
      const pub = await createApplication(server, { name: 'browser', type: 'public', rules: [{ priority: 1, container: '/browser/', permissions: ['token:create'] }] });
      const put = (transform: string) =>
        call(server, 'PUT', `/applications/${pub.id}`, { key: server.key, body: { name: 'browser', rules: [{ priority: 1, container: '/browser/', transform, permissions: ['token:create'] }] } });
      for (const transform of ['reveal', 'mask']) assertInvalid(await put(transform), 'body.rules[0].transform');
      const ok = await put('redact');
      assert.equal(ok.status, 200, ok.text);
      assert.equal(ok.body.rules[0].transform, 'redact');
    });

    it('shows a public rule stored with another transform as redact, which is how it acts', async () => {
      const pub = await createApplication(server, { name: 'older browser', type: 'public', rules: [{ priority: 1, container: '/browser/', permissions: ['token:create'] }] });
      await queryOnce(server.config.databaseUrl!, `UPDATE applications SET rules = jsonb_set(rules, '{0,transform}', '"reveal"') WHERE id = $1`, [pub.id]);
      const got = await call(server, 'GET', `/applications/${pub.id}`, { key: server.key });
      assert.equal(got.body.rules[0].transform, 'redact');
      // So the application as shown can be sent back unchanged.
      const put = await call(server, 'PUT', `/applications/${pub.id}`, { key: server.key, body: { name: got.body.name, permissions: got.body.permissions, rules: got.body.rules } });
      assert.equal(put.status, 200, put.text);
    });

    it('answers 404 for an unknown id, 400 for a malformed one', async () => {
      assertNotFound(await call(server, 'PUT', `/applications/${randomUUID()}`, { key: server.key, body: PRIVATE_UPDATE }));
      assertInvalid(await call(server, 'PUT', '/applications/123', { key: server.key, body: PRIVATE_UPDATE }), 'params.id');
    });

    it('answers 404 for another tenant\'s application and leaves it unchanged', async () => {
      const other = await createOtherTenant(server);
      const res = await call(server, 'PUT', `/applications/${other.application_id}`, { key: server.key, body: { name: 'hijacked', permissions: ['log:read'] } });
      assertNotFound(res);
      const theirs = await call(server, 'GET', `/applications/${other.application_id}`, { key: other.api_key });
      assert.equal(theirs.body.name, 'Management');
      assert.ok(theirs.body.permissions.includes('application:create'));

      const ours = await createApplication(server, PRIVATE_APP);
      assertNotFound(await call(server, 'PUT', `/applications/${ours.id}`, { key: other.api_key, body: { ...PRIVATE_UPDATE, name: 'hijacked' } }));
      assert.equal((await call(server, 'GET', `/applications/${ours.id}`, { key: server.key })).body.name, PRIVATE_APP.name);
    });

    it('applies permission changes to the application\'s key at once', async () => {
      const app = await createApplication(server, { name: 'shrinking', type: 'management', permissions: ['application:read', 'log:read'] });
      // Authenticate first, so the key's access (and its own view of the application) may be cached.
      assert.equal((await call(server, 'GET', '/applications', { key: app.key })).status, 200);
      assert.equal((await call(server, 'GET', '/applications/key', { key: app.key })).body.name, 'shrinking');
      const renamed = await call(server, 'PUT', `/applications/${app.id}`, { key: server.key, body: { name: 'renamed', permissions: ['application:read', 'log:read'] } });
      assert.equal(renamed.status, 200, renamed.text);
      assert.equal((await call(server, 'GET', '/applications/key', { key: app.key })).body.name, 'renamed', 'the key sees the update at once');

      const put = await call(server, 'PUT', `/applications/${app.id}`, { key: server.key, body: { name: 'shrinking', permissions: ['log:read'] } });
      assert.equal(put.status, 200, put.text);
      const denied = await call(server, 'GET', '/applications', { key: app.key });
      assert.equal(denied.status, 403, denied.text);
      assert.equal((await call(server, 'GET', '/logs', { key: app.key })).status, 200);

      await call(server, 'PUT', `/applications/${app.id}`, { key: server.key, body: { name: 'shrinking', rules: [{ priority: 1, permissions: ['application:read'] }] } });
      assert.equal((await call(server, 'GET', '/applications', { key: app.key })).status, 200, 'a permission granted by a rule works at once too');
      assert.equal((await call(server, 'GET', '/logs', { key: app.key })).status, 403);
    });

    it('requires application:update', async () => {
      const target = await createApplication(server, PRIVATE_APP);
      await assertAuthCases(server, { method: 'PUT', path: `/applications/${target.id}`, permissions: ['application:update'], type: 'management', body: PRIVATE_UPDATE });
      assert.equal((await call(server, 'GET', `/applications/${target.id}`, { key: server.key })).body.modified_at, undefined);
    });
  });

  describe('DELETE /applications/{id}', () => {
    it('deletes the application; its key stops working at once', async () => {
      const app = await createApplication(server, { name: 'doomed', type: 'management', permissions: ['application:read'] });
      assert.equal((await call(server, 'GET', '/applications/key', { key: app.key })).status, 200);

      const res = await call(server, 'DELETE', `/applications/${app.id}`, { key: server.key });
      assert.equal(res.status, 204, res.text);
      assert.equal(res.text, '');

      assertNotFound(await call(server, 'GET', `/applications/${app.id}`, { key: server.key }));
      const list = await call(server, 'GET', `/applications?id=${app.id}`, { key: server.key });
      assert.equal(list.body.pagination.total_items, 0);
      const revoked = await call(server, 'GET', '/applications/key', { key: app.key });
      assert.equal(revoked.status, 401, revoked.text);
    });

    it('answers 404 for an unknown or already deleted id, 400 for a malformed one', async () => {
      const app = await createApplication(server, PRIVATE_APP);
      assert.equal((await call(server, 'DELETE', `/applications/${app.id}`, { key: server.key })).status, 204);
      assertNotFound(await call(server, 'DELETE', `/applications/${app.id}`, { key: server.key }));
      assertNotFound(await call(server, 'DELETE', `/applications/${randomUUID()}`, { key: server.key }));
      assertInvalid(await call(server, 'DELETE', '/applications/xyz', { key: server.key }), 'params.id');
    });

    it('answers 404 for another tenant\'s application and leaves it in place', async () => {
      const other = await createOtherTenant(server);
      assertNotFound(await call(server, 'DELETE', `/applications/${other.application_id}`, { key: server.key }));
      assert.equal((await call(server, 'GET', '/applications/key', { key: other.api_key })).status, 200);

      const ours = await createApplication(server, PRIVATE_APP);
      assertNotFound(await call(server, 'DELETE', `/applications/${ours.id}`, { key: other.api_key }));
      assert.equal((await call(server, 'GET', `/applications/${ours.id}`, { key: server.key })).status, 200);
    });

    it('requires application:delete', async () => {
      const target = await createApplication(server, PRIVATE_APP);
      await assertAuthCases(server, { method: 'DELETE', path: `/applications/${target.id}`, permissions: ['application:delete'], type: 'management' });
      assert.equal((await call(server, 'GET', `/applications/${target.id}`, { key: server.key })).status, 200);
    });
  });

  describe('a private application key', () => {
    it('is refused every management route with 403', async () => {
      const priv = await createApplication(server, {
        name: 'private',
        type: 'private',
        permissions: ['token:read', 'session:authorize'],
        rules: [{ priority: 1, container: '/pci/', permissions: ['token:read', 'token:use'], transform: 'reveal' }],
      });
      const target = await createApplication(server, PRIVATE_APP);
      const routes: [string, string, unknown?][] = [
        ['POST', '/applications', PRIVATE_APP],
        ['GET', '/applications'],
        ['GET', '/applications/key'],
        ['GET', `/applications/${target.id}`],
        ['PUT', `/applications/${target.id}`, PRIVATE_UPDATE],
        ['DELETE', `/applications/${target.id}`],
        ['DELETE', `/applications/${priv.id}`],
      ];
      for (const [method, path, body] of routes) {
        const res = await call(server, method, path, { key: priv.key, ...(body ? { body } : {}) });
        assert.equal(res.status, 403, `${method} ${path}: ${res.text}`);
      }
      assert.equal((await call(server, 'GET', `/applications/${target.id}`, { key: server.key })).status, 200);
      assert.equal((await call(server, 'GET', `/applications/${priv.id}`, { key: server.key })).status, 200);
    });
  });

  describe('expires_at', () => {
    it('stops the key at the expiry instant; the sweep then deletes the application and logs it', async () => {
      const expiresAt = Date.now() + 2_000;
      const app = await createApplication(server, { name: 'temporary', type: 'management', permissions: ['application:read'], expires_at: new Date(expiresAt).toISOString() });
      assert.equal((await call(server, 'GET', '/applications/key', { key: app.key })).status, 200);
      // Nothing expires early: a sweep now leaves it alone.
      assert.equal(await server.running.services.applications.sweepExpired(), 0);

      await sleep(expiresAt - Date.now() + 250);
      const expired = await call(server, 'GET', '/applications/key', { key: app.key });
      assert.equal(expired.status, 401, expired.text);
      // Gone for readers too, though not yet swept.
      assertNotFound(await call(server, 'GET', `/applications/${app.id}`, { key: server.key }));
      assertNotFound(await call(server, 'PUT', `/applications/${app.id}`, { key: server.key, body: { name: 'revive', permissions: ['application:read'] } }));
      assert.equal((await call(server, 'GET', `/applications?id=${app.id}`, { key: server.key })).body.pagination.total_items, 0);

      assert.equal(await server.running.services.applications.sweepExpired(), 1);
      assert.equal(await server.running.services.applications.sweepExpired(), 0);
      const events = await eventsOf(app.id);
      const expire = events.find((e) => e.operation === 'expire');
      assert.ok(expire, `an expire event: ${JSON.stringify(events)}`);
      assert.equal(expire.entity_type, 'application');
      assert.equal(expire.actor_type, 'system');
      assert.equal((await call(server, 'GET', '/applications/key', { key: app.key })).status, 401);
    });
  });

  describe('audit', () => {
    it('records create, update and delete, newest first, with the acting application', async () => {
      const app = await createApplication(server, PRIVATE_APP);
      assert.deepEqual((await eventsOf(app.id)).map((e) => e.operation), ['create']);
      await call(server, 'PUT', `/applications/${app.id}`, { key: server.key, body: { ...PRIVATE_UPDATE, name: 'renamed' } });
      await call(server, 'DELETE', `/applications/${app.id}`, { key: server.key });
      const events = await eventsOf(app.id);
      assert.deepEqual(events.map((e) => e.operation), ['delete', 'update', 'create']);
      for (const e of events) {
        assert.equal(e.entity_type, 'application');
        assert.equal(e.actor_id, managementId);
        assert.equal(e.actor_type, 'application');
      }
    });

    it('records nothing for a rejected change', async () => {
      const app = await createApplication(server, PRIVATE_APP);
      assertInvalid(await call(server, 'PUT', `/applications/${app.id}`, { key: server.key, body: { name: 'x', permissions: [] } }), 'body.permissions');
      assert.deepEqual((await eventsOf(app.id)).map((e) => e.operation), ['create']);
    });
  });
});
