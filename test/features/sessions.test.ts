import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { call, createApplication, createOtherTenant } from '../helpers/http.ts';
import { assertAuthCases } from '../helpers/security.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';

type Created = { session_key: string; nonce: string; expires_at: string };

async function createSession(server: TestServer, publicKey: string): Promise<Created> {
  const res = await call(server, 'POST', '/sessions', { key: publicKey });
  assert.equal(res.status, 201, res.text);
  rememberSecret(res.body.session_key, res.body.nonce);
  return res.body;
}

/** The tenant's audit events about sessions with the operation, across every page. */
async function sessionEvents(server: TestServer, operation: string): Promise<{ id: string; actor_id: string; actor_type: string }[]> {
  const events: { id: string; operation: string; actor_id: string; actor_type: string }[] = [];
  let next: string | undefined;
  do {
    const res = await call(server, 'GET', `/logs?entity_type=session&size=100${next ? `&start=${encodeURIComponent(next)}` : ''}`, { key: server.key });
    assert.equal(res.status, 200);
    events.push(...res.body.data);
    next = res.body.pagination.next;
  } while (next);
  return events.filter((e) => e.operation === operation);
}

function authorize(server: TestServer, key: string, body: unknown) {
  return call(server, 'POST', '/sessions/authorize', { key, body });
}

describe('sessions', () => {
  let server: TestServer;
  let publicKey: string;
  let publicId: string;
  let privateKey: string;
  before(async () => {
    server = await startTestServer();
    const pub = await createApplication(server, { name: 'browser', type: 'public', permissions: ['token:create'] });
    publicKey = pub.key;
    publicId = pub.id;
    privateKey = (await createApplication(server, { name: 'backend', type: 'private', permissions: ['session:authorize', 'token:read'] })).key;
  });
  after(() => server.stop());

  describe('POST /sessions', () => {
    it('creates a session for a public key: a key, a nonce and an expiry three minutes away', async () => {
      const sent = Date.now();
      const res = await call(server, 'POST', '/sessions', { key: publicKey });
      const afterwards = Date.now();
      assert.equal(res.status, 201);
      rememberSecret(res.body.session_key, res.body.nonce);
      assert.deepEqual(Object.keys(res.body).sort(), ['expires_at', 'nonce', 'session_key']);
      assert.match(res.body.session_key, /^session_[\w-]{20,}$/);
      assert.ok(res.body.nonce.length >= 16);
      const expires = Date.parse(res.body.expires_at);
      assert.ok(expires >= sent + 180_000 - 1000 && expires <= afterwards + 180_000 + 1000, res.body.expires_at);

      const second = await createSession(server, publicKey);
      assert.notEqual(second.session_key, res.body.session_key);
      assert.notEqual(second.nonce, res.body.nonce);
    });

    it('records an audit event for the creation, naming the public application as actor', async () => {
      const earlier = await sessionEvents(server, 'create');
      await createSession(server, publicKey);
      const after = await sessionEvents(server, 'create');
      assert.equal(after.length, earlier.length + 1);
      const added = after.filter((e) => !earlier.some((b) => b.id === e.id));
      assert.equal(added.length, 1);
      assert.equal(added[0].actor_id, publicId);
      assert.equal(added[0].actor_type, 'application');
    });

    it('is only for public application keys', async () => {
      const res = await call(server, 'POST', '/sessions', { key: privateKey });
      assert.equal(res.status, 403);
      assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
      assert.equal((await call(server, 'POST', '/sessions', { key: server.key })).status, 403);
      const session = await createSession(server, publicKey);
      assert.equal((await call(server, 'POST', '/sessions', { key: session.session_key })).status, 403);
      const none = await call(server, 'POST', '/sessions');
      assert.equal(none.status, 401);
      assert.match(none.headers.get('content-type') ?? '', /^application\/problem\+json/);
      assert.equal((await call(server, 'POST', '/sessions', { key: 'key_not-a-real-key' })).status, 401);
    });
  });

  describe('the session key before authorization', () => {
    it('authenticates but grants nothing', async () => {
      const session = await createSession(server, publicKey);
      const perms = await call(server, 'GET', '/permissions', { key: session.session_key });
      assert.equal(perms.status, 200);
      const principal = await server.running.services.authenticator.authenticate(session.session_key);
      assert.equal(principal.kind, 'session');
      assert.equal(principal.tenantId, server.tenantId);
      assert.deepEqual(principal.permissions, []);
      assert.deepEqual(principal.rules, []);
      // A route that needs a permission the public application itself holds is still closed.
      const denied = await call(server, 'GET', '/applications', { key: session.session_key });
      assert.equal(denied.status, 403);
    });

    it('an unknown session key is 401', async () => {
      const res = await call(server, 'GET', '/permissions', { key: 'session_notarealsessionkeyatall' });
      assert.equal(res.status, 401);
    });
  });

  describe('POST /sessions/authorize', () => {
    it('grants the session the permissions and rules, once', async () => {
      const session = await createSession(server, publicKey);
      const eventsBefore = await sessionEvents(server, 'authorize');
      // Cached as unauthorized first: authorization must take effect at once regardless.
      assert.deepEqual((await server.running.services.authenticator.authenticate(session.session_key)).permissions, []);
      const rules = [
        { priority: 1, container: '/pci/high/', transform: 'mask', permissions: ['token:read'] },
        { priority: 2, conditions: [{ attribute: 'id', operator: 'equals', value: 'tok_1' }], transform: 'reveal', permissions: ['token:use'] },
      ];
      const res = await authorize(server, privateKey, { nonce: session.nonce, permissions: ['token:read'], rules });
      assert.equal(res.status, 204);
      assert.equal(res.text, '');

      const principal = await server.running.services.authenticator.authenticate(session.session_key);
      assert.deepEqual(principal.permissions, ['token:read']);
      assert.deepEqual(principal.rules, [
        { priority: 1, container: '/pci/high/', transform: 'mask', permissions: ['token:read'] },
        { priority: 2, conditions: [{ attribute: 'id', operator: 'equals', value: 'tok_1' }], transform: 'reveal', permissions: ['token:use'] },
      ]);

      // Routes that need other permissions stay closed to the session.
      assert.equal((await call(server, 'GET', '/applications', { key: session.session_key })).status, 403);
      assert.equal((await call(server, 'GET', '/logs', { key: session.session_key })).status, 403);

      const again = await authorize(server, privateKey, { nonce: session.nonce, permissions: ['token:use'] });
      assert.equal(again.status, 404);
      // The failed second attempt changed nothing.
      assert.deepEqual((await server.running.services.authenticator.authenticate(session.session_key)).permissions, ['token:read']);

      const eventsAfter = await sessionEvents(server, 'authorize');
      assert.equal(eventsAfter.length, eventsBefore.length + 1, 'one authorize event, none for the failed attempt');
    });

    it('opens exactly the routes the granted permissions open', async () => {
      const reader = await createSession(server, publicKey);
      const user = await createSession(server, publicKey);
      assert.equal((await call(server, 'GET', '/tokens', { key: reader.session_key })).status, 403);
      assert.equal((await authorize(server, privateKey, { nonce: reader.nonce, permissions: ['token:read'] })).status, 204);
      assert.equal((await authorize(server, privateKey, { nonce: user.nonce, permissions: ['token:use'] })).status, 204);
      const listed = await call(server, 'GET', '/tokens', { key: reader.session_key });
      assert.equal(listed.status, 200, listed.text);
      assert.equal((await call(server, 'GET', '/tokens', { key: user.session_key })).status, 403);
      // Granted through a rule rather than directly: the route opens too.
      const ruled = await createSession(server, publicKey);
      const rules = [{ priority: 1, container: '/general/', transform: 'redact', permissions: ['token:read'] }];
      assert.equal((await authorize(server, privateKey, { nonce: ruled.nonce, rules })).status, 204);
      assert.equal((await call(server, 'GET', '/tokens', { key: ruled.session_key })).status, 200);
    });

    it('keeps the default expiry unless expires_at is given, and applies expires_at when it is', async () => {
      const plain = await createSession(server, publicKey);
      assert.equal((await authorize(server, privateKey, { nonce: plain.nonce, permissions: ['token:read'] })).status, 204);
      const p1 = await server.running.services.authenticator.authenticate(plain.session_key);
      assert.equal(p1.expiresAt?.toISOString(), new Date(plain.expires_at).toISOString());

      const extended = await createSession(server, publicKey);
      const until = new Date(Date.now() + 3600_000).toISOString();
      assert.equal((await authorize(server, privateKey, { nonce: extended.nonce, permissions: ['token:read'], expires_at: until })).status, 204);
      const p2 = await server.running.services.authenticator.authenticate(extended.session_key);
      assert.equal(p2.expiresAt?.toISOString(), until);
    });

    it('accepts expires_at up to 24 hours after creation and rejects later ones', async () => {
      const session = await createSession(server, publicKey);
      const created = Date.parse(session.expires_at) - 180_000;
      const tooLate = new Date(created + 24 * 3600_000 + 60_000).toISOString();
      const res = await authorize(server, privateKey, { nonce: session.nonce, permissions: ['token:read'], expires_at: tooLate });
      assert.equal(res.status, 400);
      assert.ok(res.body.errors['body.expires_at'], res.text);
      // The rejected attempt did not consume the nonce.
      const ok = new Date(created + 23 * 3600_000).toISOString();
      assert.equal((await authorize(server, privateKey, { nonce: session.nonce, permissions: ['token:read'], expires_at: ok })).status, 204);
    });

    it('rejects bad input with 400 and field paths', async () => {
      const session = await createSession(server, publicKey);
      const nonce = session.nonce;
      const cases: [string, unknown, string][] = [
        ['missing nonce', { permissions: ['token:read'] }, 'body.nonce'],
        ['empty nonce', { nonce: '', permissions: ['token:read'] }, 'body.nonce'],
        ['nothing granted', { nonce }, 'body.permissions'],
        ['both empty', { nonce, permissions: [], rules: [] }, 'body.permissions'],
        ['unknown permission', { nonce, permissions: ['token:fly'] }, 'body.permissions[0]'],
        ['management permission', { nonce, permissions: ['application:read'] }, 'body.permissions[0]'],
        ['duplicate permission', { nonce, permissions: ['token:read', 'token:read'] }, 'body.permissions'],
        ['permission not a string', { nonce, permissions: [7] }, 'body.permissions[0]'],
        ['management permission in a rule', { nonce, rules: [{ priority: 1, container: '/a/', permissions: ['log:read'] }] }, 'body.rules[0].permissions[0]'],
        ['rule with container and conditions', { nonce, rules: [{ priority: 1, container: '/a/', conditions: [{ attribute: 'id', operator: 'equals', value: 'x' }], permissions: ['token:read'] }] }, 'body.rules[0].conditions'],
        ['rule with neither', { nonce, rules: [{ priority: 1, permissions: ['token:read'] }] }, 'body.rules[0]'],
        ['rule with empty conditions', { nonce, rules: [{ priority: 1, conditions: [], permissions: ['token:read'] }] }, 'body.rules[0]'],
        ['bad condition attribute', { nonce, rules: [{ priority: 1, conditions: [{ attribute: 'type', operator: 'equals', value: 'x' }], permissions: ['token:read'] }] }, 'body.rules[0].conditions[0].attribute'],
        ['bad condition operator', { nonce, rules: [{ priority: 1, conditions: [{ attribute: 'id', operator: 'contains', value: 'x' }], permissions: ['token:read'] }] }, 'body.rules[0].conditions[0].operator'],
        ['bad container', { nonce, rules: [{ priority: 1, container: 'pci', permissions: ['token:read'] }] }, 'body.rules[0].container'],
        ['rule without permissions', { nonce, rules: [{ priority: 1, container: '/a/', permissions: [] }] }, 'body.rules[0].permissions'],
        ['bad transform', { nonce, rules: [{ priority: 1, container: '/a/', transform: 'show', permissions: ['token:read'] }] }, 'body.rules[0].transform'],
        ['priority 0', { nonce, rules: [{ priority: 0, container: '/a/', permissions: ['token:read'] }] }, 'body.rules[0].priority'],
        ['duplicate priority', { nonce, rules: [{ priority: 1, container: '/a/', permissions: ['token:read'] }, { priority: 1, container: '/b/', permissions: ['token:read'] }] }, 'body.rules[1].priority'],
        ['expires_at in the past', { nonce, permissions: ['token:read'], expires_at: new Date(Date.now() - 1000).toISOString() }, 'body.expires_at'],
        ['expires_at not a date', { nonce, permissions: ['token:read'], expires_at: 'tomorrow' }, 'body.expires_at'],
      ];
      for (const [name, body, field] of cases) {
        const res = await authorize(server, privateKey, body);
        assert.equal(res.status, 400, `${name}: ${res.text}`);
        assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
        assert.ok(res.body.errors?.[field], `${name}: expected an error on ${field}, got ${JSON.stringify(res.body.errors)}`);
      }
      // None of them consumed the nonce.
      assert.equal((await authorize(server, privateKey, { nonce, permissions: ['token:read'] })).status, 204);
    });

    it('answers 404 for an unknown nonce', async () => {
      const res = await authorize(server, privateKey, { nonce: 'not-a-nonce-anyone-was-given', permissions: ['token:read'] });
      assert.equal(res.status, 404);
      assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
    });

    it('needs a private key with session:authorize', async () => {
      const session = await createSession(server, publicKey);
      const body = { nonce: session.nonce, permissions: ['token:read'] };
      const lacking = await createApplication(server, { name: 'backend without', type: 'private', permissions: ['token:read'] });
      assert.equal((await authorize(server, lacking.key, body)).status, 403);
      assert.equal((await authorize(server, publicKey, body)).status, 403);
      assert.equal((await authorize(server, server.key, body)).status, 403);
      const other = await createSession(server, publicKey);
      assert.equal((await authorize(server, other.session_key, body)).status, 403);
      await authorize(server, privateKey, { nonce: other.nonce, permissions: ['token:read'] });
      assert.equal((await authorize(server, other.session_key, body)).status, 403, 'an authorized session cannot authorize');
      await assertAuthCases(server, { method: 'POST', path: '/sessions/authorize', permissions: ['session:authorize'], type: 'private', body });
      // All of that left the nonce unused.
      assert.equal((await authorize(server, privateKey, body)).status, 204);
    });

    it('cannot authorize another tenant\'s session', async () => {
      const other = await createOtherTenant(server);
      const otherPublic = await createApplication(server, { name: 'other browser', type: 'public', permissions: ['token:create'] }, other.api_key);
      const otherPrivate = await createApplication(server, { name: 'other backend', type: 'private', permissions: ['session:authorize'] }, other.api_key);
      const theirs = await createSession(server, otherPublic.key);
      const res = await authorize(server, privateKey, { nonce: theirs.nonce, permissions: ['token:read'] });
      assert.equal(res.status, 404);
      // Also with an expires_at beyond the limit: the answer must not reveal that the nonce exists.
      const far = new Date(Date.now() + 48 * 3600_000).toISOString();
      assert.equal((await authorize(server, privateKey, { nonce: theirs.nonce, permissions: ['token:read'], expires_at: far })).status, 404);
      assert.deepEqual((await server.running.services.authenticator.authenticate(theirs.session_key)).permissions, []);
      // Their own backend still can.
      assert.equal((await authorize(server, otherPrivate.key, { nonce: theirs.nonce, permissions: ['token:read'] })).status, 204);
      const principal = await server.running.services.authenticator.authenticate(theirs.session_key);
      assert.equal(principal.tenantId, other.tenant_id);
      assert.deepEqual(principal.permissions, ['token:read']);
    });

    it('lets exactly one of two concurrent authorizations win', async () => {
      for (let round = 0; round < 5; round++) {
        const session = await createSession(server, publicKey);
        const results = await Promise.all([
          authorize(server, privateKey, { nonce: session.nonce, permissions: ['token:read'] }),
          authorize(server, privateKey, { nonce: session.nonce, permissions: ['token:use'] }),
        ]);
        const statuses = results.map((r) => r.status).sort();
        assert.deepEqual(statuses, [204, 404]);
        const winner = results[0].status === 204 ? ['token:read'] : ['token:use'];
        assert.deepEqual((await server.running.services.authenticator.authenticate(session.session_key)).permissions, winner);
      }
    });

    it('stops working for sessions whose public application is deleted', async () => {
      const pub = await createApplication(server, { name: 'short-lived browser', type: 'public', permissions: ['token:create'] });
      const session = await createSession(server, pub.key);
      assert.equal((await call(server, 'GET', '/permissions', { key: session.session_key })).status, 200);
      assert.equal((await call(server, 'DELETE', `/applications/${pub.id}`, { key: server.key })).status, 204);
      assert.equal((await call(server, 'GET', '/permissions', { key: session.session_key })).status, 401);
      assert.equal((await authorize(server, privateKey, { nonce: session.nonce, permissions: ['token:read'] })).status, 404);
    });
  });

  it('a session ends when the private application that authorized it is deleted or expires', async () => {
    const granter = await createApplication(server, { name: 'revoked backend', type: 'private', permissions: ['session:authorize'] });
    const revoked = await createSession(server, publicKey);
    assert.equal((await authorize(server, granter.key, { nonce: revoked.nonce, permissions: ['3ds:session:read'] })).status, 204);
    assert.equal((await call(server, 'GET', '/permissions', { key: revoked.session_key })).status, 200);
    assert.equal((await call(server, 'DELETE', `/applications/${granter.id}`, { key: server.key })).status, 204);
    assert.equal((await call(server, 'GET', '/permissions', { key: revoked.session_key })).status, 401);

    const expiring = await createApplication(server, {
      name: 'expiring backend',
      type: 'private',
      permissions: ['session:authorize'],
      expires_at: new Date(Date.now() + 1500).toISOString(),
    });
    const lapsing = await createSession(server, publicKey);
    assert.equal((await authorize(server, expiring.key, { nonce: lapsing.nonce, permissions: ['3ds:session:read'] })).status, 204);
    assert.equal((await call(server, 'GET', '/permissions', { key: lapsing.session_key })).status, 200);
    await sleep(1700);
    assert.equal((await call(server, 'GET', '/permissions', { key: lapsing.session_key })).status, 401);
  });

  it('a session ends when its public application expires, however long it was authorized for', async () => {
    const pub = await createApplication(server, {
      name: 'expiring browser',
      type: 'public',
      permissions: ['token:create'],
      expires_at: new Date(Date.now() + 1500).toISOString(),
    });
    const session = await createSession(server, pub.key);
    assert.equal(session.expires_at, pub.expires_at, 'the session says when it ends');
    const until = new Date(Date.now() + 3600_000).toISOString();
    assert.equal((await authorize(server, privateKey, { nonce: session.nonce, permissions: ['token:read'], expires_at: until })).status, 204);
    assert.equal((await call(server, 'GET', '/permissions', { key: session.session_key })).status, 200);
    await sleep(1700);
    assert.equal((await call(server, 'GET', '/permissions', { key: pub.key })).status, 401);
    assert.equal((await call(server, 'GET', '/permissions', { key: session.session_key })).status, 401);
  });
});

describe('session expiry', () => {
  // A second server: its sessions live one second, and no background sweeper races the test's own sweep.
  let server: TestServer;
  let publicKey: string;
  let privateKey: string;
  let sql: pg.Client;
  before(async () => {
    server = await startTestServer({ SESSION_TTL_SECONDS: '1', WORKERS: '0' });
    publicKey = (await createApplication(server, { name: 'browser', type: 'public', permissions: ['token:create'] })).key;
    privateKey = (await createApplication(server, { name: 'backend', type: 'private', permissions: ['session:authorize'] })).key;
    sql = new pg.Client({ connectionString: server.config.databaseUrl });
    await sql.connect();
  });
  after(async () => {
    await sql.end();
    await server.stop();
  });

  it('an expired session key no longer authenticates, its nonce no longer authorizes, and the sweep removes it', async () => {
    const expiring = await createSession(server, publicKey);
    const extended = await createSession(server, publicKey);
    assert.ok(Date.parse(expiring.expires_at) - Date.now() <= 1000);
    // Both cached while valid: expiry must apply to cached keys too.
    assert.equal((await call(server, 'GET', '/permissions', { key: expiring.session_key })).status, 200);
    assert.equal((await call(server, 'GET', '/permissions', { key: extended.session_key })).status, 200);
    const until = new Date(Date.now() + 3600_000).toISOString();
    assert.equal((await authorize(server, privateKey, { nonce: extended.nonce, permissions: ['token:read'], expires_at: until })).status, 204);

    await sleep(1200);
    const expired = await call(server, 'GET', '/permissions', { key: expiring.session_key });
    assert.equal(expired.status, 401);
    assert.match(expired.headers.get('content-type') ?? '', /^application\/problem\+json/);
    assert.equal((await authorize(server, privateKey, { nonce: expiring.nonce, permissions: ['token:read'] })).status, 404);
    // Authorized with a later expiry, the other one outlives the default lifetime.
    assert.equal((await call(server, 'GET', '/permissions', { key: extended.session_key })).status, 200);

    const swept = await server.running.services.sessions.sweepExpired();
    assert.ok(swept > 0);
    const { rows } = await sql.query('SELECT expires_at <= now() AS expired FROM sessions');
    assert.ok(rows.length >= 1);
    assert.ok(rows.every((r) => !r.expired), 'only unexpired sessions remain');
    assert.equal(await server.running.services.sessions.sweepExpired(), 0);
    assert.equal((await call(server, 'GET', '/permissions', { key: expiring.session_key })).status, 401);
    assert.equal((await call(server, 'GET', '/permissions', { key: extended.session_key })).status, 200);
  });
});
