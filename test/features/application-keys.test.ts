import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { call, createApplication, createOtherTenant, type Response } from '../helpers/http.ts';
import { assertAuthCases } from '../helpers/security.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';

type Key = { id: string; tenant_id: string; key?: string; created_by?: string; created_at: string };

/** An application whose keys can prove who they are: GET /applications/key needs application:read. */
const READER = { name: 'key holder', type: 'management', permissions: ['application:read'] };

function assertInvalid(res: Response, field: string): void {
  assert.equal(res.status, 400, `expected 400 for ${field}, got ${res.status} ${res.text}`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.ok(res.body.errors?.[field], `errors should name ${field}: ${JSON.stringify(res.body.errors)}`);
}

function assertNotFound(res: Response): void {
  assert.equal(res.status, 404, res.text);
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.equal(res.body.status, 404);
}

describe('application keys', () => {
  let server: TestServer;
  let managementId: string;

  before(async () => {
    server = await startTestServer();
    managementId = (await call(server, 'GET', '/applications/key', { key: server.key })).body.id;
  });
  after(() => server.stop());

  async function newKey(applicationId: string, key = server.key): Promise<Response> {
    const res = await call(server, 'POST', `/applications/${applicationId}/keys`, { key });
    if (typeof res.body?.key === 'string') rememberSecret(res.body.key);
    return res;
  }

  async function whoAmI(key: string): Promise<Response> {
    return call(server, 'GET', '/applications/key', { key });
  }

  describe('POST /applications/{id}/keys', () => {
    it('creates a second key that authenticates as the application', async () => {
      const app = await createApplication(server, READER);
      // The application as its first key sees it, before the second exists (and so possibly cached).
      assert.equal((await whoAmI(app.key)).body.keys.length, 1);
      const res = await newKey(app.id);
      assert.equal(res.status, 201, res.text);
      const created: Key = res.body;
      assert.match(created.id, /^[0-9a-f-]{36}$/);
      assert.equal(created.tenant_id, server.tenantId);
      assert.equal(created.created_by, managementId);
      assert.ok(!Number.isNaN(Date.parse(created.created_at)));
      assert.equal(typeof created.key, 'string');
      assert.notEqual(created.key, app.key);
      assert.notEqual(created.id, (app.keys as Key[])[0].id);

      const self = await whoAmI(created.key!);
      assert.equal(self.status, 200, self.text);
      assert.equal(self.body.id, app.id);
      assert.deepEqual(self.body.keys.map((k: Key) => k.id), [(app.keys as Key[])[0].id, created.id]);
      // The first key keeps working, and sees the new key at once.
      const first = await whoAmI(app.key);
      assert.equal(first.body.id, app.id);
      assert.deepEqual(first.body.keys, self.body.keys);
    });

    it('creates keys for an application made without one', async () => {
      const res = await call(server, 'POST', '/applications', { key: server.key, body: { ...READER, create_key: false } });
      assert.equal(res.status, 201, res.text);
      const key = await newKey(res.body.id);
      assert.equal(key.status, 201, key.text);
      assert.equal((await whoAmI(key.body.key)).body.id, res.body.id);
    });

    it('answers 404 for an unknown application and 400 for a malformed id', async () => {
      assertNotFound(await newKey(randomUUID()));
      assertInvalid(await newKey('not-a-uuid'), 'params.id');
    });

    it('answers 404 for another tenant\'s application, in both directions', async () => {
      const other = await createOtherTenant(server);
      const ours = await createApplication(server, READER);
      assertNotFound(await newKey(other.application_id));
      assertNotFound(await newKey(ours.id, other.api_key));
      const theirKeys = await call(server, 'GET', `/applications/${other.application_id}/keys`, { key: other.api_key });
      assert.equal(theirKeys.body.pagination.total_items, 1);
      const ourKeys = await call(server, 'GET', `/applications/${ours.id}/keys`, { key: server.key });
      assert.equal(ourKeys.body.pagination.total_items, 1);
    });

    it('records an audit event', async () => {
      const app = await createApplication(server, READER);
      const key = await newKey(app.id);
      const logs = await call(server, 'GET', `/logs?entity_type=application_key&entity_id=${key.body.id}`, { key: server.key });
      assert.deepEqual(logs.body.data.map((e: { operation: string }) => e.operation), ['create']);
      assert.equal(logs.body.data[0].actor_id, managementId);
      assert.ok(!logs.text.includes(key.body.key), 'the audit log never holds the key value');
    });

    it('requires application:create', async () => {
      const app = await createApplication(server, READER);
      await assertAuthCases(server, { method: 'POST', path: `/applications/${app.id}/keys`, permissions: ['application:create'], type: 'management' });
      const keys = await call(server, 'GET', `/applications/${app.id}/keys`, { key: server.key });
      assert.equal(keys.body.pagination.total_items, 1, 'refused calls created no key');
    });
  });

  describe('GET /applications/{id}/keys', () => {
    let app: Awaited<ReturnType<typeof createApplication>>;
    let ids: string[];
    before(async () => {
      app = await createApplication(server, READER);
      ids = [(app.keys as Key[])[0].id];
      for (let i = 0; i < 2; i++) ids.push((await newKey(app.id)).body.id);
    });

    it('lists the application\'s keys, oldest first, never with their values', async () => {
      const res = await call(server, 'GET', `/applications/${app.id}/keys`, { key: server.key });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body.pagination, { total_items: 3, page_number: 1, page_size: 20, total_pages: 1 });
      assert.deepEqual(res.body.data.map((k: Key) => k.id), ids);
      for (const k of res.body.data as Key[]) {
        assert.equal('key' in k, false);
        assert.equal(k.tenant_id, server.tenantId);
        assert.equal(k.created_by, managementId);
      }
    });

    it('pages with page and size', async () => {
      const first = await call(server, 'GET', `/applications/${app.id}/keys?size=2`, { key: server.key });
      const second = await call(server, 'GET', `/applications/${app.id}/keys?size=2&page=2`, { key: server.key });
      assert.deepEqual(first.body.pagination, { total_items: 3, page_number: 1, page_size: 2, total_pages: 2 });
      assert.deepEqual(second.body.pagination, { total_items: 3, page_number: 2, page_size: 2, total_pages: 2 });
      assert.deepEqual([...first.body.data, ...second.body.data].map((k: Key) => k.id), ids);
    });

    it('rejects size 101 and page 0', async () => {
      assertInvalid(await call(server, 'GET', `/applications/${app.id}/keys?size=101`, { key: server.key }), 'query.size');
      assertInvalid(await call(server, 'GET', `/applications/${app.id}/keys?page=0`, { key: server.key }), 'query.page');
    });

    it('lists only that application\'s keys', async () => {
      const other = await createApplication(server, READER);
      const res = await call(server, 'GET', `/applications/${other.id}/keys`, { key: server.key });
      assert.deepEqual(res.body.data.map((k: Key) => k.id), [(other.keys as Key[])[0].id]);
    });

    it('answers 404 for an unknown or other tenant\'s application, 400 for a malformed id', async () => {
      assertNotFound(await call(server, 'GET', `/applications/${randomUUID()}/keys`, { key: server.key }));
      const other = await createOtherTenant(server);
      assertNotFound(await call(server, 'GET', `/applications/${other.application_id}/keys`, { key: server.key }));
      assertNotFound(await call(server, 'GET', `/applications/${app.id}/keys`, { key: other.api_key }));
      assertInvalid(await call(server, 'GET', '/applications/nope/keys', { key: server.key }), 'params.id');
    });

    it('requires application:read', async () => {
      await assertAuthCases(server, { method: 'GET', path: `/applications/${app.id}/keys`, permissions: ['application:read'], type: 'management' });
    });
  });

  describe('GET /applications/{id}/keys/{keyId}', () => {
    it('returns the key without its value', async () => {
      const app = await createApplication(server, READER);
      const created = await newKey(app.id);
      const res = await call(server, 'GET', `/applications/${app.id}/keys/${created.body.id}`, { key: server.key });
      assert.equal(res.status, 200, res.text);
      const { key: _value, ...stored } = created.body;
      assert.deepEqual(res.body, stored);
      assert.equal('key' in res.body, false);
    });

    it('answers 404 for an unknown key, a key of another application and an unknown application', async () => {
      const a = await createApplication(server, READER);
      const b = await createApplication(server, READER);
      const keyOfB = (b.keys as Key[])[0].id;
      assertNotFound(await call(server, 'GET', `/applications/${a.id}/keys/${randomUUID()}`, { key: server.key }));
      assertNotFound(await call(server, 'GET', `/applications/${a.id}/keys/${keyOfB}`, { key: server.key }));
      assertNotFound(await call(server, 'GET', `/applications/${randomUUID()}/keys/${keyOfB}`, { key: server.key }));
      assert.equal((await call(server, 'GET', `/applications/${b.id}/keys/${keyOfB}`, { key: server.key })).status, 200);
    });

    it('answers 404 across tenants', async () => {
      const other = await createOtherTenant(server);
      const theirKey = (await call(server, 'GET', `/applications/${other.application_id}/keys`, { key: other.api_key })).body.data[0].id;
      assertNotFound(await call(server, 'GET', `/applications/${other.application_id}/keys/${theirKey}`, { key: server.key }));
      const ours = await createApplication(server, READER);
      const ourKey = (ours.keys as Key[])[0].id;
      assertNotFound(await call(server, 'GET', `/applications/${ours.id}/keys/${ourKey}`, { key: other.api_key }));
      // Not even when a caller pairs its own application with another tenant's key id.
      assertNotFound(await call(server, 'GET', `/applications/${ours.id}/keys/${theirKey}`, { key: server.key }));
    });

    it('answers 400 for malformed ids', async () => {
      const app = await createApplication(server, READER);
      assertInvalid(await call(server, 'GET', `/applications/${app.id}/keys/not-a-uuid`, { key: server.key }), 'params.keyId');
      assertInvalid(await call(server, 'GET', `/applications/bad/keys/${randomUUID()}`, { key: server.key }), 'params.id');
    });

    it('requires application:read', async () => {
      const app = await createApplication(server, READER);
      const keyId = (app.keys as Key[])[0].id;
      await assertAuthCases(server, { method: 'GET', path: `/applications/${app.id}/keys/${keyId}`, permissions: ['application:read'], type: 'management' });
    });
  });

  describe('DELETE /applications/{id}/keys/{keyId}', () => {
    it('revokes that key at once while the application\'s other key keeps working', async () => {
      const app = await createApplication(server, READER);
      const second = await newKey(app.id);
      // Both keys authenticate first, so both are cached.
      assert.equal((await whoAmI(app.key)).status, 200);
      assert.equal((await whoAmI(second.body.key)).status, 200);

      const res = await call(server, 'DELETE', `/applications/${app.id}/keys/${(app.keys as Key[])[0].id}`, { key: server.key });
      assert.equal(res.status, 204, res.text);
      assert.equal(res.text, '');

      const revoked = await whoAmI(app.key);
      assert.equal(revoked.status, 401, revoked.text);
      const kept = await whoAmI(second.body.key);
      assert.equal(kept.status, 200, kept.text);
      assert.deepEqual(kept.body.keys.map((k: Key) => k.id), [second.body.id]);
      assertNotFound(await call(server, 'GET', `/applications/${app.id}/keys/${(app.keys as Key[])[0].id}`, { key: server.key }));
      const list = await call(server, 'GET', `/applications/${app.id}/keys`, { key: server.key });
      assert.deepEqual(list.body.data.map((k: Key) => k.id), [second.body.id]);
    });

    it('lets an application delete its last key, leaving the application in place', async () => {
      const app = await createApplication(server, READER);
      assert.equal((await call(server, 'DELETE', `/applications/${app.id}/keys/${(app.keys as Key[])[0].id}`, { key: server.key })).status, 204);
      assert.equal((await whoAmI(app.key)).status, 401);
      const got = await call(server, 'GET', `/applications/${app.id}`, { key: server.key });
      assert.equal(got.status, 200);
      assert.deepEqual(got.body.keys, []);
    });

    it('answers 404 for an unknown key, an already deleted key and an unknown application', async () => {
      const app = await createApplication(server, READER);
      const keyId = (app.keys as Key[])[0].id;
      assertNotFound(await call(server, 'DELETE', `/applications/${app.id}/keys/${randomUUID()}`, { key: server.key }));
      assertNotFound(await call(server, 'DELETE', `/applications/${randomUUID()}/keys/${keyId}`, { key: server.key }));
      assert.equal((await call(server, 'DELETE', `/applications/${app.id}/keys/${keyId}`, { key: server.key })).status, 204);
      assertNotFound(await call(server, 'DELETE', `/applications/${app.id}/keys/${keyId}`, { key: server.key }));
    });

    it('answers 404 for a key of another application and leaves that key working', async () => {
      const a = await createApplication(server, READER);
      const b = await createApplication(server, READER);
      assertNotFound(await call(server, 'DELETE', `/applications/${a.id}/keys/${(b.keys as Key[])[0].id}`, { key: server.key }));
      assert.equal((await whoAmI(b.key)).status, 200);
    });

    it('answers 404 across tenants and leaves the key working', async () => {
      const other = await createOtherTenant(server);
      const theirKey = (await call(server, 'GET', `/applications/${other.application_id}/keys`, { key: other.api_key })).body.data[0].id;
      assertNotFound(await call(server, 'DELETE', `/applications/${other.application_id}/keys/${theirKey}`, { key: server.key }));
      assert.equal((await whoAmI(other.api_key)).status, 200);

      const ours = await createApplication(server, READER);
      assertNotFound(await call(server, 'DELETE', `/applications/${ours.id}/keys/${(ours.keys as Key[])[0].id}`, { key: other.api_key }));
      assert.equal((await whoAmI(ours.key)).status, 200);
    });

    it('answers 400 for malformed ids', async () => {
      const app = await createApplication(server, READER);
      assertInvalid(await call(server, 'DELETE', `/applications/${app.id}/keys/123`, { key: server.key }), 'params.keyId');
      assertInvalid(await call(server, 'DELETE', `/applications/123/keys/${(app.keys as Key[])[0].id}`, { key: server.key }), 'params.id');
    });

    it('records an audit event', async () => {
      const app = await createApplication(server, READER);
      const keyId = (app.keys as Key[])[0].id;
      await call(server, 'DELETE', `/applications/${app.id}/keys/${keyId}`, { key: server.key });
      const logs = await call(server, 'GET', `/logs?entity_type=application_key&entity_id=${keyId}`, { key: server.key });
      assert.deepEqual(logs.body.data.map((e: { operation: string }) => e.operation), ['delete', 'create']);
      assert.equal(logs.body.data[0].actor_id, managementId);
    });

    it('requires application:delete', async () => {
      const app = await createApplication(server, READER);
      const keyId = (app.keys as Key[])[0].id;
      await assertAuthCases(server, { method: 'DELETE', path: `/applications/${app.id}/keys/${keyId}`, permissions: ['application:delete'], type: 'management' });
      assert.equal((await whoAmI(app.key)).status, 200, 'refused calls deleted nothing');
    });
  });

  describe('a private application key', () => {
    it('is refused every key route with 403, even for its own application', async () => {
      const priv = await createApplication(server, { name: 'private', type: 'private', rules: [{ priority: 1, container: '/pci/', permissions: ['token:read'] }] });
      const privKeyId = (priv.keys as Key[])[0].id;
      const routes: [string, string][] = [
        ['POST', `/applications/${priv.id}/keys`],
        ['GET', `/applications/${priv.id}/keys`],
        ['GET', `/applications/${priv.id}/keys/${privKeyId}`],
        ['DELETE', `/applications/${priv.id}/keys/${privKeyId}`],
      ];
      for (const [method, path] of routes) {
        const res = await call(server, method, path, { key: priv.key });
        assert.equal(res.status, 403, `${method} ${path}: ${res.text}`);
      }
      const keys = await call(server, 'GET', `/applications/${priv.id}/keys`, { key: server.key });
      assert.deepEqual(keys.body.data.map((k: Key) => k.id), [privKeyId]);
    });
  });

  describe('deleting the application', () => {
    it('revokes every one of its keys and makes its key routes 404', async () => {
      const app = await createApplication(server, READER);
      const second = await newKey(app.id);
      assert.equal((await whoAmI(second.body.key)).status, 200);
      assert.equal((await call(server, 'DELETE', `/applications/${app.id}`, { key: server.key })).status, 204);
      assert.equal((await whoAmI(app.key)).status, 401);
      assert.equal((await whoAmI(second.body.key)).status, 401);
      assertNotFound(await call(server, 'GET', `/applications/${app.id}/keys`, { key: server.key }));
      assertNotFound(await call(server, 'GET', `/applications/${app.id}/keys/${second.body.id}`, { key: server.key }));
      assertNotFound(await newKey(app.id));
    });
  });
});
