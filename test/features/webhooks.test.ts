import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { call, createApplication, createOtherTenant, type Response } from '../helpers/http.ts';
import { assertInvalid, assertNotFound } from '../helpers/problems.ts';
import { assertAuthCases } from '../helpers/security.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';

/** /webhooks management: create, read, list, replace, delete, event types; validation and isolation. */

const EVENT_TYPES = ['reactor.invoked', 'reactor.completed', 'reactor.failed', 'token.created', 'token.updated', 'token.deleted', 'token.expired', 'token-intent.created', 'token-intent.deleted', 'token-intent.converted',
  '3ds.session.created', '3ds.session.method-completed', '3ds.session.authenticated', '3ds.session.challenge-completed',
  '3ds.session.decoupled-challenge-notification', '3ds.session.challenge-result-retrieved',
  'transaction.created', 'transaction.authorized', 'transaction.captured', 'transaction.voided', 'transaction.declined', 'transaction.failed',
  'refund.created', 'refund.succeeded', 'refund.failed',
  'tenant.invitation.created', 'tenant.invitation.resent', 'tenant.invitation.deleted', 'tenant.invitation.accepted', 'tenant.member.created', 'tenant.member.deleted'];
const HOOK = { name: 'orders backend', url: 'https://hooks.example.com/coffer', events: ['token.created'] };

describe('webhooks API', () => {
  let server: TestServer;
  let sql: pg.Client;
  let managementId: string;

  before(async () => {
    server = await startTestServer({ WORKERS: '0' });
    sql = new pg.Client({ connectionString: server.config.databaseUrl });
    await sql.connect();
    managementId = (await call(server, 'GET', '/applications/key', { key: server.key })).body.id;
  });
  after(async () => {
    await sql.end();
    await server.stop();
  });

  async function create(body: unknown, key = server.key): Promise<Response> {
    const res = await call(server, 'POST', '/webhooks', { key, body });
    if (typeof res.body?.secret === 'string') rememberSecret(res.body.secret);
    return res;
  }

  async function created(body: unknown = HOOK) {
    const res = await create(body);
    assert.equal(res.status, 201, res.text);
    return res.body;
  }

  describe('POST /webhooks', () => {
    it('creates a webhook and shows its Standard Webhooks secret once', async () => {
      const res = await create({ ...HOOK, notify_email: 'ops@example.com' });
      assert.equal(res.status, 201, res.text);
      const hook = res.body;
      assert.match(hook.id, /^[0-9a-f-]{36}$/);
      assert.equal(hook.tenant_id, server.tenantId);
      assert.equal(hook.name, HOOK.name);
      assert.equal(hook.url, HOOK.url);
      assert.equal(hook.notify_email, 'ops@example.com');
      assert.deepEqual(hook.events, ['token.created']);
      assert.equal(hook.status, 'enabled', 'enabled by default');
      assert.equal(hook.created_by, managementId);
      assert.ok(!Number.isNaN(Date.parse(hook.created_at)));
      assert.equal(hook.modified_at, undefined);
      assert.match(hook.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
      assert.equal(Buffer.from(hook.secret.slice(6), 'base64').length, 32);

      const got = await call(server, 'GET', `/webhooks/${hook.id}`, { key: server.key });
      assert.equal(got.status, 200, got.text);
      assert.equal(got.body.secret, undefined, 'the secret is shown only on creation');
      const { secret, ...rest } = hook;
      assert.deepEqual(got.body, rest);
    });

    it('stores the URL as it is called: without a fragment, which is never sent', async () => {
      const res = await create({ ...HOOK, url: `${HOOK.url}#section` });
      assert.equal(res.status, 201, res.text);
      assert.equal(res.body.url, HOOK.url);
    });

    it('stores the secret only encrypted', async () => {
      const hook = await created();
      const { rows } = await sql.query(`SELECT * FROM webhooks WHERE id = $1`, [hook.id]);
      const row = rows[0];
      assert.ok(row);
      const everything = JSON.stringify(row) + Buffer.from(row.secret_ciphertext).toString('latin1');
      assert.ok(!everything.includes(hook.secret), 'no plaintext secret at rest');
      assert.ok(!everything.includes(hook.secret.slice(6)), 'not even its base64 part');
      assert.ok(!everything.includes(Buffer.from(hook.secret.slice(6), 'base64').toString('latin1')), 'nor its bytes');
      // A different webhook gets a different secret.
      const other = await created();
      assert.notEqual(other.secret, hook.secret);
    });

    it('accepts "*", several types, a disabled status, http URLs, and a 200-character name', async () => {
      const res = await create({ name: 'n'.repeat(200), url: 'http://hooks.example.com:8443/path?x=1', events: ['*'], status: 'disabled', notify_email: null });
      assert.equal(res.status, 201, res.text);
      assert.deepEqual(res.body.events, ['*']);
      assert.equal(res.body.status, 'disabled');
      assert.equal(res.body.notify_email, undefined);
      const all = await create({ ...HOOK, events: [...EVENT_TYPES] });
      assert.equal(all.status, 201, all.text);
      assert.deepEqual(all.body.events, EVENT_TYPES);
    });

    const invalid: { what: string; body: unknown; field: string }[] = [
      { what: 'a missing name', body: { url: HOOK.url, events: HOOK.events }, field: 'body.name' },
      { what: 'an empty name', body: { ...HOOK, name: '' }, field: 'body.name' },
      { what: 'a name of 201 characters', body: { ...HOOK, name: 'n'.repeat(201) }, field: 'body.name' },
      { what: 'a missing url', body: { name: 'x', events: HOOK.events }, field: 'body.url' },
      { what: 'a relative url', body: { ...HOOK, url: '/hooks' }, field: 'body.url' },
      { what: 'a url that is not a URL', body: { ...HOOK, url: 'not a url' }, field: 'body.url' },
      { what: 'an ftp url', body: { ...HOOK, url: 'ftp://hooks.example.com/' }, field: 'body.url' },
      { what: 'a javascript: url', body: { ...HOOK, url: 'javascript:alert(1)' }, field: 'body.url' },
      { what: 'a url with credentials', body: { ...HOOK, url: 'https://user:pass@hooks.example.com/' }, field: 'body.url' },
      { what: 'a url of 2049 characters', body: { ...HOOK, url: `https://hooks.example.com/${'a'.repeat(2049 - 26)}` }, field: 'body.url' },
      { what: 'a url to a private address', body: { ...HOOK, url: 'http://10.0.0.1/' }, field: 'body.url' },
      { what: 'a url to cloud metadata', body: { ...HOOK, url: 'http://169.254.169.254/latest/meta-data/' }, field: 'body.url' },
      { what: 'a url to loopback', body: { ...HOOK, url: 'http://127.0.0.1:8080/' }, field: 'body.url' },
      { what: 'a url to IPv6 loopback', body: { ...HOOK, url: 'http://[::1]/' }, field: 'body.url' },
      { what: 'a url to loopback written as a number', body: { ...HOOK, url: 'http://2130706433/' }, field: 'body.url' },
      { what: 'a url to an IPv4-mapped private address', body: { ...HOOK, url: 'http://[::ffff:192.168.1.1]/' }, field: 'body.url' },
      { what: 'a url to 0.0.0.0', body: { ...HOOK, url: 'http://0.0.0.0/' }, field: 'body.url' },
      { what: 'a url that is a number', body: { ...HOOK, url: 42 }, field: 'body.url' },
      { what: 'a url with a space at either end', body: { ...HOOK, url: ` ${HOOK.url} ` }, field: 'body.url' },
      { what: 'a url with a tab in its host', body: { ...HOOK, url: 'https://hooks.exa\tmple.com/coffer' }, field: 'body.url' },
      { what: 'a url with a line break', body: { ...HOOK, url: `${HOOK.url}\n` }, field: 'body.url' },
      { what: 'a url with a space in its path', body: { ...HOOK, url: 'https://hooks.example.com/a b' }, field: 'body.url' },
      { what: 'a url longer than 2048 characters once normalised', body: { ...HOOK, url: `https://hooks.example.com/${'é'.repeat(1000)}` }, field: 'body.url' },
      { what: 'missing events', body: { name: 'x', url: HOOK.url }, field: 'body.events' },
      { what: 'empty events', body: { ...HOOK, events: [] }, field: 'body.events' },
      { what: 'an unknown event type', body: { ...HOOK, events: ['token.created', 'token.stolen'] }, field: 'body.events[1]' },
      { what: 'duplicate event types', body: { ...HOOK, events: ['token.created', 'token.created'] }, field: 'body.events' },
      { what: 'events as a string', body: { ...HOOK, events: 'token.created' }, field: 'body.events' },
      { what: 'an unknown status', body: { ...HOOK, status: 'paused' }, field: 'body.status' },
      { what: 'an invalid notify_email', body: { ...HOOK, notify_email: 'not-an-email' }, field: 'body.notify_email' },
      { what: 'a notify_email with spaces', body: { ...HOOK, notify_email: 'ops team@example.com' }, field: 'body.notify_email' },
      { what: 'a notify_email of 255 characters', body: { ...HOOK, notify_email: `${'a'.repeat(243)}@example.com` }, field: 'body.notify_email' },
      { what: 'a caller-chosen secret', body: { ...HOOK, secret: 'whsec_AAAA' }, field: 'body.secret' },
    ];
    for (const c of invalid) {
      it(`rejects ${c.what} with 400 naming ${c.field}`, async () => {
        assertInvalid(await create(c.body), c.field);
      });
    }

    it('stores and shows the URL normalised: the one deliveries are sent to', async () => {
      const cases: [string, string][] = [
        ['HTTPS://Hooks.Example.COM:443', 'https://hooks.example.com/'],
        ['http:hooks.example.com/in', 'http://hooks.example.com/in'],
        ['https://hööks.example.com/ä?q=ü', 'https://xn--hks-snaa.example.com/%C3%A4?q=%C3%BC'],
      ];
      for (const [given, stored] of cases) {
        const hook = await created({ ...HOOK, url: given });
        assert.equal(hook.url, stored, given);
        assert.equal((await call(server, 'GET', `/webhooks/${hook.id}`, { key: server.key })).body.url, stored);
        const put = await call(server, 'PUT', `/webhooks/${hook.id}`, { key: server.key, body: { ...HOOK, url: given } });
        assert.equal(put.body.url, stored, `PUT ${given}`);
      }
    });

    it('creates nothing when validation fails, and reports every problem at once', async () => {
      const before = (await call(server, 'GET', '/webhooks?size=1', { key: server.key })).body.pagination.total_items;
      const res = await create({ name: '', url: 'http://10.0.0.1/', events: [] });
      assertInvalid(res, 'body.name');
      assertInvalid(res, 'body.events');
      const blocked = await create({ ...HOOK, url: 'http://169.254.169.254/' });
      assertInvalid(blocked, 'body.url');
      assert.equal((await call(server, 'GET', '/webhooks?size=1', { key: server.key })).body.pagination.total_items, before);
    });

    it('rejects a body that is not JSON', async () => {
      const res = await call(server, 'POST', '/webhooks', { key: server.key, raw: '{', contentType: 'application/json' });
      assert.equal(res.status, 400);
    });
  });

  describe('the limit of webhooks per tenant', () => {
    it('a tenant has at most 100 webhooks, even when they are created concurrently', async () => {
      const other = await createOtherTenant(server);
      const make = async () => {
        const res = await call(server, 'POST', '/webhooks', { key: other.api_key, body: HOOK });
        if (typeof res.body?.secret === 'string') rememberSecret(res.body.secret);
        return res;
      };
      for (let i = 0; i < 90; i++) assert.equal((await make()).status, 201);
      // Twenty at once for the last ten places: exactly ten get one.
      const racing = await Promise.all(Array.from({ length: 20 }, make));
      assert.deepEqual(racing.map((r) => r.status).sort(), [...Array(10).fill(201), ...Array(10).fill(422)]);
      const refused = racing.find((r) => r.status === 422)!;
      assert.match(refused.headers.get('content-type') ?? '', /^application\/problem\+json/);
      assert.match(refused.body.detail, /at most 100 webhooks/);
      const list = await call(server, 'GET', '/webhooks?size=1', { key: other.api_key });
      assert.equal(list.body.pagination.total_items, 100);

      // A place freed is a place to take; the other tenant's count is its own.
      const del = await call(server, 'DELETE', `/webhooks/${list.body.data[0].id}`, { key: other.api_key });
      assert.equal(del.status, 204);
      assert.equal((await make()).status, 201);
      assert.equal((await make()).status, 422);
      assert.equal((await create(HOOK)).status, 201);
    });
  });

  describe('GET /webhooks and /webhooks/event-types', () => {
    it('lists the tenant\'s webhooks with offset pagination, without secrets', async () => {
      const { tenant_id: otherTenant, api_key: otherKey } = await createOtherTenant(server);
      const mine = [await created({ ...HOOK, name: 'page-a' }), await created({ ...HOOK, name: 'page-b' }), await created({ ...HOOK, name: 'page-c' })];
      const theirs = await call(server, 'POST', '/webhooks', { key: otherKey, body: { ...HOOK, name: 'theirs' } });
      assert.equal(theirs.status, 201);
      rememberSecret(theirs.body.secret);
      assert.equal(theirs.body.tenant_id, otherTenant);

      const all = await call(server, 'GET', '/webhooks?size=100', { key: server.key });
      assert.equal(all.status, 200, all.text);
      const total = all.body.pagination.total_items;
      assert.equal(all.body.data.length, total);
      assert.ok(all.body.data.every((w: { tenant_id: string; secret?: string }) => w.tenant_id === server.tenantId && w.secret === undefined));
      assert.ok(!all.body.data.some((w: { id: string }) => w.id === theirs.body.id), 'no other tenant\'s webhook');
      const ids = all.body.data.map((w: { id: string }) => w.id);
      for (const m of mine) assert.ok(ids.includes(m.id));

      const page2 = await call(server, 'GET', '/webhooks?page=2&size=2', { key: server.key });
      assert.equal(page2.status, 200);
      assert.deepEqual(page2.body.pagination, { total_items: total, page_number: 2, page_size: 2, total_pages: Math.ceil(total / 2) });
      assert.deepEqual(page2.body.data.map((w: { id: string }) => w.id), ids.slice(2, 4));

      assertInvalid(await call(server, 'GET', '/webhooks?size=101', { key: server.key }), 'query.size');
      assertInvalid(await call(server, 'GET', '/webhooks?page=0', { key: server.key }), 'query.page');
    });

    it('lists the event types', async () => {
      const res = await call(server, 'GET', '/webhooks/event-types', { key: server.key });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body, EVENT_TYPES);
    });
  });

  describe('GET/PUT/DELETE /webhooks/{id}', () => {
    it('replaces a webhook, keeping its secret, and records the change', async () => {
      const hook = await created({ ...HOOK, notify_email: 'ops@example.com', status: 'disabled' });
      const res = await call(server, 'PUT', `/webhooks/${hook.id}`, {
        key: server.key,
        body: { name: 'renamed', url: 'https://other.example.com/in', events: ['token.deleted', 'reactor.failed'] },
      });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.id, hook.id);
      assert.equal(res.body.name, 'renamed');
      assert.equal(res.body.url, 'https://other.example.com/in');
      assert.deepEqual(res.body.events, ['token.deleted', 'reactor.failed']);
      assert.equal(res.body.status, 'enabled', 'a full replacement: omitted status is the default');
      assert.equal(res.body.notify_email, undefined, 'omitted notify_email is removed');
      assert.equal(res.body.secret, undefined);
      assert.equal(res.body.modified_by, managementId);
      assert.ok(res.body.modified_at);
      assert.equal(res.body.created_at, hook.created_at);
      const got = await call(server, 'GET', `/webhooks/${hook.id}`, { key: server.key });
      assert.deepEqual(got.body, res.body);
      const { rows } = await sql.query(`SELECT secret_ciphertext FROM webhooks WHERE id = $1`, [hook.id]);
      assert.ok(rows[0].secret_ciphertext.length > 0);
    });

    it('validates a replacement like a creation', async () => {
      const hook = await created();
      assertInvalid(await call(server, 'PUT', `/webhooks/${hook.id}`, { key: server.key, body: { url: HOOK.url, events: HOOK.events } }), 'body.name');
      assertInvalid(await call(server, 'PUT', `/webhooks/${hook.id}`, { key: server.key, body: { name: 'x', events: HOOK.events } }), 'body.url');
      assertInvalid(await call(server, 'PUT', `/webhooks/${hook.id}`, { key: server.key, body: { ...HOOK, url: 'http://192.168.0.1/' } }), 'body.url');
      assertInvalid(await call(server, 'PUT', `/webhooks/${hook.id}`, { key: server.key, body: { ...HOOK, events: [] } }), 'body.events');
      const got = await call(server, 'GET', `/webhooks/${hook.id}`, { key: server.key });
      assert.equal(got.body.url, HOOK.url, 'unchanged');
    });

    it('deletes a webhook, then answers 404', async () => {
      const hook = await created();
      const del = await call(server, 'DELETE', `/webhooks/${hook.id}`, { key: server.key });
      assert.equal(del.status, 204, del.text);
      assert.equal(del.text, '');
      assertNotFound(await call(server, 'GET', `/webhooks/${hook.id}`, { key: server.key }));
      assertNotFound(await call(server, 'DELETE', `/webhooks/${hook.id}`, { key: server.key }));
      assertNotFound(await call(server, 'PUT', `/webhooks/${hook.id}`, { key: server.key, body: HOOK }));
      assertNotFound(await call(server, 'GET', `/webhooks/${hook.id}/deliveries`, { key: server.key }));
    });

    it('answers 404 for unknown ids and 400 for ids that are not UUIDs', async () => {
      const id = randomUUID();
      assertNotFound(await call(server, 'GET', `/webhooks/${id}`, { key: server.key }));
      assertNotFound(await call(server, 'PUT', `/webhooks/${id}`, { key: server.key, body: HOOK }));
      assertNotFound(await call(server, 'DELETE', `/webhooks/${id}`, { key: server.key }));
      assertNotFound(await call(server, 'GET', `/webhooks/${id}/deliveries`, { key: server.key }));
      assertInvalid(await call(server, 'GET', '/webhooks/not-a-uuid', { key: server.key }), 'params.id');
    });

    it('records create, update and delete in the audit log', async () => {
      const hook = await created();
      await call(server, 'PUT', `/webhooks/${hook.id}`, { key: server.key, body: { ...HOOK, name: 'audited' } });
      await call(server, 'DELETE', `/webhooks/${hook.id}`, { key: server.key });
      const logs = await call(server, 'GET', `/logs?entity_type=webhook&entity_id=${hook.id}`, { key: server.key });
      assert.equal(logs.status, 200, logs.text);
      assert.deepEqual(logs.body.data.map((e: { operation: string }) => e.operation), ['delete', 'update', 'create']);
      assert.ok(logs.body.data.every((e: { actor_id: string }) => e.actor_id === managementId));
      assert.ok(!JSON.stringify(logs.body).includes('whsec_'));
      const types = await call(server, 'GET', '/logs/entity-types', { key: server.key });
      assert.ok(types.body.includes('webhook'));
    });
  });

  describe('security', () => {
    it('every route needs its webhook permission on a management key', async () => {
      const hook = await created();
      const routes = [
        { method: 'POST', path: '/webhooks', permissions: ['webhook:create'], body: HOOK },
        { method: 'GET', path: '/webhooks', permissions: ['webhook:read'] },
        { method: 'GET', path: '/webhooks/event-types', permissions: ['webhook:read'] },
        { method: 'GET', path: `/webhooks/${hook.id}`, permissions: ['webhook:read'] },
        { method: 'GET', path: `/webhooks/${hook.id}/deliveries`, permissions: ['webhook:read'] },
        { method: 'PUT', path: `/webhooks/${hook.id}`, permissions: ['webhook:update'], body: HOOK },
        { method: 'DELETE', path: `/webhooks/${hook.id}`, permissions: ['webhook:delete'] },
      ];
      const priv = await createApplication(server, { name: 'private', type: 'private', permissions: ['token:create', 'token:read'] });
      for (const r of routes) {
        await assertAuthCases(server, { ...r, type: 'management' });
        const denied = await call(server, r.method, r.path, { key: priv.key, body: r.body });
        assert.equal(denied.status, 403, `${r.method} ${r.path} with a private key`);
      }
      // Nothing the refused calls asked for happened.
      const still = await call(server, 'GET', `/webhooks/${hook.id}`, { key: server.key });
      assert.equal(still.status, 200);
      assert.equal(still.body.name, HOOK.name);
    });

    it('a key with only webhook:read can read but not change', async () => {
      const hook = await created();
      const reader = await createApplication(server, { name: 'reader', type: 'management', permissions: ['webhook:read'] });
      assert.equal((await call(server, 'GET', `/webhooks/${hook.id}`, { key: reader.key })).status, 200);
      assert.equal((await call(server, 'PUT', `/webhooks/${hook.id}`, { key: reader.key, body: HOOK })).status, 403);
      assert.equal((await call(server, 'DELETE', `/webhooks/${hook.id}`, { key: reader.key })).status, 403);
      assert.equal((await call(server, 'POST', '/webhooks', { key: reader.key, body: HOOK })).status, 403);
    });

    it('another tenant\'s webhook is 404 for every operation and is left untouched', async () => {
      const hook = await created();
      const other = await createOtherTenant(server);
      assertNotFound(await call(server, 'GET', `/webhooks/${hook.id}`, { key: other.api_key }));
      assertNotFound(await call(server, 'GET', `/webhooks/${hook.id}/deliveries`, { key: other.api_key }));
      assertNotFound(await call(server, 'PUT', `/webhooks/${hook.id}`, { key: other.api_key, body: { ...HOOK, url: 'https://attacker.example.com/' } }));
      assertNotFound(await call(server, 'DELETE', `/webhooks/${hook.id}`, { key: other.api_key }));
      const list = await call(server, 'GET', '/webhooks?size=100', { key: other.api_key });
      assert.ok(!list.body.data.some((w: { id: string }) => w.id === hook.id));
      const mine = await call(server, 'GET', `/webhooks/${hook.id}`, { key: server.key });
      assert.equal(mine.body.url, HOOK.url);
    });

    it('replays an idempotent create without creating a second webhook', async () => {
      const headers = { 'svc-idempotency-key': randomUUID() };
      const first = await call(server, 'POST', '/webhooks', { key: server.key, body: HOOK, headers });
      assert.equal(first.status, 201, first.text);
      rememberSecret(first.body.secret);
      const again = await call(server, 'POST', '/webhooks', { key: server.key, body: HOOK, headers });
      assert.equal(again.status, 201);
      assert.equal(again.body.id, first.body.id);
      assert.equal(again.body.secret, first.body.secret);
    });
  });
});
