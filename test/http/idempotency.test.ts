import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createHash, randomUUID } from 'node:crypto';
import pg from 'pg';
import { sweepIdempotencyKeys } from '../../src/http/idempotency.ts';
import { call, createApplication, createOtherTenant } from '../helpers/http.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';

const HEADER = 'svc-idempotency-key';

async function waitFor(check: () => Promise<boolean>, what: string): Promise<void> {
  const until = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

describe('SVC-IDEMPOTENCY-KEY', () => {
  let server: TestServer;
  let sql: pg.Client;
  before(async () => {
    server = await startTestServer();
    sql = new pg.Client({ connectionString: server.config.databaseUrl });
    await sql.connect();
  });
  after(async () => {
    await sql.end();
    await server.stop();
  });

  const appBody = (name: string) => ({ name, type: 'private', permissions: ['token:read'] });

  async function appsNamed(name: string, key = server.key) {
    const res = await call(server, 'GET', '/applications?size=100', { key });
    assert.equal(res.status, 200);
    return (res.body.data as { id: string; name: string }[]).filter((a) => a.name === name);
  }

  async function totalApplications(key = server.key): Promise<number> {
    const res = await call(server, 'GET', '/applications', { key });
    assert.equal(res.status, 200);
    return res.body.pagination.total_items;
  }

  /** Stored entries are keyed by a digest, not the key as sent: a call's entry is found as the row it added. */
  async function storedKeys(): Promise<string[]> {
    const { rows } = await sql.query('SELECT key FROM idempotency_keys');
    return rows.map((r) => r.key as string);
  }

  async function entryAddedBy(fn: () => Promise<unknown>): Promise<string> {
    const existing = new Set(await storedKeys());
    await fn();
    const added = (await storedKeys()).filter((k) => !existing.has(k));
    assert.equal(added.length, 1, 'exactly one entry stored');
    return added[0];
  }

  async function createEvents(entityId: string): Promise<unknown[]> {
    const res = await call(server, 'GET', `/logs?entity_type=application&entity_id=${entityId}&size=100`, { key: server.key });
    assert.equal(res.status, 200);
    return (res.body.data as { operation: string }[]).filter((e) => e.operation === 'create');
  }

  it('replays a success byte for byte with the same status, and does the work once', async () => {
    const key = randomUUID();
    const total = await totalApplications();
    const first = await call(server, 'POST', '/applications', { key: server.key, body: appBody('replayed'), headers: { [HEADER]: key } });
    assert.equal(first.status, 201);
    assert.equal(first.headers.get('svc-idempotent-replayed'), null);

    const second = await call(server, 'POST', '/applications', { key: server.key, body: appBody('replayed'), headers: { [HEADER]: key } });
    assert.equal(second.status, 201);
    assert.equal(second.headers.get('svc-idempotent-replayed'), 'true');
    assert.equal(second.text, first.text);
    assert.equal(second.headers.get('content-type'), first.headers.get('content-type'));
    // The replay carries the key created the first time, so nothing new was issued.
    assert.equal(second.body.key, first.body.key);

    assert.equal(await totalApplications(), total + 1);
    assert.equal((await appsNamed('replayed')).length, 1);
    assert.equal((await createEvents(first.body.id)).length, 1);
  });

  it('replays PUT too', async () => {
    const app = await createApplication(server, appBody('put target'));
    const key = randomUUID();
    const body = { name: 'put renamed', permissions: ['token:read', 'token:use'], rules: [] };
    const first = await call(server, 'PUT', `/applications/${app.id}`, { key: server.key, body, headers: { [HEADER]: key } });
    assert.equal(first.status, 200);
    // Changed by someone else meanwhile: a replay still answers what the first request got.
    const other = await call(server, 'PUT', `/applications/${app.id}`, { key: server.key, body: { ...body, name: 'changed since' } });
    assert.equal(other.status, 200);
    const replay = await call(server, 'PUT', `/applications/${app.id}`, { key: server.key, body, headers: { [HEADER]: key } });
    assert.equal(replay.status, 200);
    assert.equal(replay.headers.get('svc-idempotent-replayed'), 'true');
    assert.equal(replay.text, first.text);
    assert.equal(replay.body.name, 'put renamed');
  });

  it('stores nothing for a request rejected by the schema: the fixed request is processed anew', async () => {
    const key = randomUUID();
    const bad = await call(server, 'POST', '/applications', { key: server.key, body: { name: 'schema fail', type: 'nope', permissions: ['token:read'] }, headers: { [HEADER]: key } });
    assert.equal(bad.status, 400);
    const good = await call(server, 'POST', '/applications', { key: server.key, body: appBody('schema fail'), headers: { [HEADER]: key } });
    assert.equal(good.status, 201);
    assert.equal(good.headers.get('svc-idempotent-replayed'), null);
    assert.equal((await appsNamed('schema fail')).length, 1);
  });

  it('stores nothing for a request the service rejects: its writes roll back and the key is free again', async () => {
    const key = randomUUID();
    const body = { name: 'service fail', type: 'private', permissions: ['token:read', 'no:such:permission'] };
    const bad = await call(server, 'POST', '/applications', { key: server.key, body, headers: { [HEADER]: key } });
    assert.equal(bad.status, 400);
    assert.ok(bad.body.errors['body.permissions[1]']);
    // The same failing request again is processed again (not a replay of the 400).
    const again = await call(server, 'POST', '/applications', { key: server.key, body, headers: { [HEADER]: key } });
    assert.equal(again.status, 400);
    assert.equal(again.headers.get('svc-idempotent-replayed'), null);
    const good = await call(server, 'POST', '/applications', { key: server.key, body: appBody('service fail'), headers: { [HEADER]: key } });
    assert.equal(good.status, 201);
    assert.equal(good.headers.get('svc-idempotent-replayed'), null);
    assert.equal((await appsNamed('service fail')).length, 1);
  });

  it('rolls back the writes of a request that fails after writing', async () => {
    // 404 from PUT happens after validation, inside the request's transaction.
    const key = randomUUID();
    const missing = randomUUID();
    const stored = await storedKeys();
    const res = await call(server, 'PUT', `/applications/${missing}`, { key: server.key, body: { name: 'x', permissions: ['token:read'], rules: [] }, headers: { [HEADER]: key } });
    assert.equal(res.status, 404);
    assert.deepEqual((await storedKeys()).sort(), stored.sort());
  });

  it('is scoped to the calling application and to the tenant', async () => {
    const key = randomUUID();
    const first = await call(server, 'POST', '/applications', { key: server.key, body: appBody('scoped'), headers: { [HEADER]: key } });
    assert.equal(first.status, 201);

    const otherApp = await createApplication(server, { name: 'second manager', type: 'management', permissions: ['application:create', 'application:read'] });
    const byOtherApp = await call(server, 'POST', '/applications', { key: otherApp.key, body: appBody('scoped'), headers: { [HEADER]: key } });
    assert.equal(byOtherApp.status, 201);
    assert.equal(byOtherApp.headers.get('svc-idempotent-replayed'), null);
    assert.notEqual(byOtherApp.body.id, first.body.id);
    assert.equal((await appsNamed('scoped')).length, 2);

    const other = await createOtherTenant(server);
    const byOtherTenant = await call(server, 'POST', '/applications', { key: other.api_key, body: appBody('scoped'), headers: { [HEADER]: key } });
    assert.equal(byOtherTenant.status, 201);
    assert.equal(byOtherTenant.headers.get('svc-idempotent-replayed'), null);
    assert.equal(byOtherTenant.body.tenant_id, other.tenant_id);
    assert.equal((await appsNamed('scoped', other.api_key)).length, 1);
    assert.equal((await appsNamed('scoped')).length, 2);
  });

  it('rejects the same key with a different request with 422', async () => {
    const key = randomUUID();
    const first = await call(server, 'POST', '/applications', { key: server.key, body: appBody('first body'), headers: { [HEADER]: key } });
    assert.equal(first.status, 201);
    const second = await call(server, 'POST', '/applications', { key: server.key, body: appBody('second body'), headers: { [HEADER]: key } });
    assert.equal(second.status, 422);
    assert.match(second.headers.get('content-type') ?? '', /^application\/problem\+json/);
    assert.equal((await appsNamed('second body')).length, 0);
    // Same body, different path: also a different request.
    const app = await createApplication(server, appBody('put elsewhere'));
    const put = await call(server, 'PUT', `/applications/${app.id}`, { key: server.key, body: { name: 'first body', permissions: ['token:read'], rules: [] }, headers: { [HEADER]: key } });
    assert.equal(put.status, 422);
  });

  it('replays the same JSON sent with its keys in another order, or with a default spelt out', async () => {
    const key = randomUUID();
    const send = (raw: string) =>
      call(server, 'POST', '/applications', { key: server.key, raw, contentType: 'application/json', headers: { [HEADER]: key } });
    const first = await send('{"name":"reordered","type":"private","permissions":["token:read","token:use"]}');
    assert.equal(first.status, 201, first.text);
    // JSON objects are unordered (RFC 8259): a client re-serialising its request on retry sends the same request.
    for (const raw of [
      '{"type":"private","permissions":["token:read","token:use"],"name":"reordered"}',
      '{"name":"reordered","type":"private","permissions":["token:read","token:use"],"create_key":true,"rules":[]}',
    ]) {
      const again = await send(raw);
      assert.equal(again.status, 201, `${raw}: ${again.text}`);
      assert.equal(again.headers.get('svc-idempotent-replayed'), 'true');
      assert.equal(again.text, first.text);
    }
    assert.equal((await appsNamed('reordered')).length, 1);
    // Arrays keep their order: that is a different request.
    const swapped = await call(server, 'POST', '/applications', {
      key: server.key, body: { name: 'reordered', type: 'private', permissions: ['token:use', 'token:read'] }, headers: { [HEADER]: key },
    });
    assert.equal(swapped.status, 422);
  });

  it('rejects a malformed key with 400', async () => {
    for (const bad of ['k'.repeat(300), 'has space', 'ünïcode']) {
      const res = await call(server, 'POST', '/applications', { key: server.key, body: appBody('bad key'), headers: { [HEADER]: bad } });
      assert.equal(res.status, 400, `key ${JSON.stringify(bad)}`);
      assert.ok(res.body.errors['headers.svc-idempotency-key'], JSON.stringify(res.body));
    }
    assert.equal((await appsNamed('bad key')).length, 0);
    // 255 visible characters is the longest accepted key.
    const longest = await call(server, 'POST', '/applications', { key: server.key, body: appBody('bad key'), headers: { [HEADER]: 'k'.repeat(255) } });
    assert.equal(longest.status, 201);
  });

  it('ignores the header on GET and DELETE', async () => {
    const key = randomUUID();
    const stored = await storedKeys();
    const list1 = await call(server, 'GET', '/applications', { key: server.key, headers: { [HEADER]: key } });
    assert.equal(list1.status, 200);
    const app = await createApplication(server, appBody('get and delete'));
    const list2 = await call(server, 'GET', '/applications', { key: server.key, headers: { [HEADER]: key } });
    assert.equal(list2.headers.get('svc-idempotent-replayed'), null);
    assert.equal(list2.body.pagination.total_items, list1.body.pagination.total_items + 1);

    const del1 = await call(server, 'DELETE', `/applications/${app.id}`, { key: server.key, headers: { [HEADER]: key } });
    assert.equal(del1.status, 204);
    const del2 = await call(server, 'DELETE', `/applications/${app.id}`, { key: server.key, headers: { [HEADER]: key } });
    assert.equal(del2.status, 404);
    assert.equal(del2.headers.get('svc-idempotent-replayed'), null);
    assert.deepEqual((await storedKeys()).sort(), stored.sort());
  });

  it('answers 409 while the first request with the key is in flight; its effects and reply then commit together', async () => {
    const key = randomUUID();
    const body = appBody('in flight');
    const lock = new pg.Client({ connectionString: server.config.databaseUrl });
    await lock.connect();
    let first: ReturnType<typeof call> | undefined;
    try {
      await lock.query('BEGIN');
      // SHARE blocks the first request's INSERT but not reads, so authenticating the requests
      // (a SELECT on applications whenever the key cache was just invalidated) cannot hang the test.
      await lock.query('LOCK TABLE applications IN SHARE MODE');
      first = call(server, 'POST', '/applications', { key: server.key, body, headers: { [HEADER]: key } });
      await waitFor(async () => {
        const { rows } = await sql.query(`SELECT count(*)::int AS n FROM pg_locks WHERE database = (SELECT oid FROM pg_database WHERE datname = current_database()) AND relation = 'applications'::regclass AND NOT granted`);
        return rows[0].n > 0;
      }, 'the first request to block on the table lock');
      await sleep(100);
      const second = await withTimeout(call(server, 'POST', '/applications', { key: server.key, body, headers: { [HEADER]: key } }), 10_000);
      assert.equal(second.status, 409);
      assert.match(second.headers.get('content-type') ?? '', /^application\/problem\+json/);
      assert.equal(second.body.status, 409);
    } finally {
      await lock.query('ROLLBACK');
      await lock.end();
    }
    const done = await first!;
    assert.equal(done.status, 201);
    assert.equal(done.headers.get('svc-idempotent-replayed'), null);

    const third = await call(server, 'POST', '/applications', { key: server.key, body, headers: { [HEADER]: key } });
    assert.equal(third.status, 201);
    assert.equal(third.headers.get('svc-idempotent-replayed'), 'true');
    assert.equal(third.text, done.text);

    const apps = await appsNamed('in flight');
    assert.equal(apps.length, 1);
    assert.equal(apps[0].id, done.body.id);
    assert.equal((await createEvents(done.body.id)).length, 1);
  });

  it('revokes at once when a PUT under a key commits, even if a request re-cached the old grant meanwhile and the notice is lost', async () => {
    const target = await createApplication(server, { name: 'revoked under a key', type: 'management', permissions: ['log:read', 'tenant:read'] });
    assert.equal((await call(server, 'GET', '/logs?size=1', { key: target.key })).status, 200);
    const lock = new pg.Client({ connectionString: server.config.databaseUrl });
    await lock.connect();
    let put: ReturnType<typeof call> | undefined;
    try {
      await lock.query('BEGIN');
      // EXCLUSIVE holds the PUT at the INSERT of its reply, after its change and its cache clearing,
      // while reads (authenticating, the key lookup) go on.
      await lock.query('LOCK TABLE idempotency_keys IN EXCLUSIVE MODE');
      put = call(server, 'PUT', `/applications/${target.id}`, {
        key: server.key,
        body: { name: 'revoked under a key', permissions: ['tenant:read'] },
        headers: { [HEADER]: randomUUID() },
      });
      await waitFor(async () => {
        const { rows } = await sql.query(`SELECT count(*)::int AS n FROM pg_locks WHERE relation = 'idempotency_keys'::regclass AND NOT granted`);
        return rows[0].n > 0;
      }, 'the PUT to block on the table lock');
      // Not committed yet: the key still holds log:read, and its process caches that again.
      assert.equal((await call(server, 'GET', '/logs?size=1', { key: target.key })).status, 200);
      // The invalidation notice sent at the commit is lost (the listener's connection drops;
      // it reconnects only a second later): only the writer's own post-commit clearing remains.
      await sql.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE datname = current_database() AND state = 'idle' AND pid NOT IN (pg_backend_pid(), $1)`,
        [(await lock.query('SELECT pg_backend_pid() AS pid')).rows[0].pid],
      );
    } finally {
      await lock.query('COMMIT');
      await lock.end();
    }
    const done = await put!;
    assert.equal(done.status, 200, done.text);
    assert.deepEqual(done.body.permissions, ['tenant:read']);
    const after = await call(server, 'GET', '/logs?size=1', { key: target.key });
    assert.equal(after.status, 403, 'the revoked permission still worked after the PUT answered');
  });

  it('ignores the key on POST /sessions: a public key is no secret, so a replay would give the session key to whoever guessed the idempotency key', async () => {
    const pub = await createApplication(server, { name: 'idem public', type: 'public', permissions: ['token:create'] });
    const key = randomUUID();
    const first = await call(server, 'POST', '/sessions', { key: pub.key, headers: { [HEADER]: key } });
    assert.equal(first.status, 201);
    rememberSecret(first.body.session_key, first.body.nonce);
    // Another browser holding the same public key, sending the same (guessed) idempotency key.
    const second = await call(server, 'POST', '/sessions', { key: pub.key, headers: { [HEADER]: key } });
    assert.equal(second.status, 201);
    rememberSecret(second.body.session_key, second.body.nonce);
    assert.equal(second.headers.get('svc-idempotent-replayed'), null);
    assert.notEqual(second.body.session_key, first.body.session_key);
    assert.notEqual(second.body.nonce, first.body.nonce);
    const { rows } = await sql.query('SELECT count(*)::int AS n FROM sessions WHERE public_application_id = $1', [pub.id]);
    assert.equal(rows[0].n, 2);
  });

  it('forgets keys once swept after their retention: reuse is then a new request', async () => {
    const key = randomUUID();
    let first: Awaited<ReturnType<typeof call>> | undefined;
    const entry = await entryAddedBy(async () => {
      first = await call(server, 'POST', '/applications', { key: server.key, body: appBody('swept'), headers: { [HEADER]: key } });
    });
    assert.equal(first!.status, 201);
    const keep = randomUUID();
    const kept = await entryAddedBy(async () => {
      assert.equal((await call(server, 'POST', '/applications', { key: server.key, body: appBody('kept'), headers: { [HEADER]: keep } })).status, 201);
    });

    const stored = await sql.query(`SELECT expires_at > now() + interval '23 hours' AND expires_at <= now() + interval '24 hours' AS ok FROM idempotency_keys WHERE key = $1`, [entry]);
    assert.equal(stored.rows[0].ok, true, 'retention is 24 hours');

    await sql.query(`UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE key = $1`, [entry]);
    const swept = await sweepIdempotencyKeys(server.running.database.db);
    assert.ok(swept >= 1);
    const left = await sql.query('SELECT key FROM idempotency_keys WHERE key = ANY($1)', [[entry, kept]]);
    assert.deepEqual(left.rows.map((r) => r.key), [kept]);

    const reuse = await call(server, 'POST', '/applications', { key: server.key, body: appBody('swept'), headers: { [HEADER]: key } });
    assert.equal(reuse.status, 201);
    assert.equal(reuse.headers.get('svc-idempotent-replayed'), null);
    assert.notEqual(reuse.body.id, first!.body.id);
    assert.equal((await appsNamed('swept')).length, 2);

    const keptReplay = await call(server, 'POST', '/applications', { key: server.key, body: appBody('kept'), headers: { [HEADER]: keep } });
    assert.equal(keptReplay.headers.get('svc-idempotent-replayed'), 'true');
  });

  it('keeps no secret of the reply or the request readable at rest', async () => {
    // The reply holds the new application's API key; a session reply holds a session key and nonce.
    const key = randomUUID();
    const res = await call(server, 'POST', '/applications', { key: server.key, body: appBody('at rest'), headers: { [HEADER]: key } });
    assert.equal(res.status, 201);
    rememberSecret(res.body.key);
    const { rows } = await sql.query(`SELECT t.*::text AS row, encode(request_hash, 'hex') AS request_hash FROM idempotency_keys t`);
    const all = rows.map((r) => r.row).join('\n');
    assert.ok(!all.includes(res.body.key), 'the API key in the stored reply is readable');
    assert.ok(!all.includes(res.body.id), 'the stored reply is readable');
    assert.ok(!all.includes(key), 'the idempotency key is stored as given');
    // Nor is the request hash a plain digest of the body that could be confirmed by guessing it.
    const plain = createHash('sha256').update(`POST /applications\n${JSON.stringify({ ...appBody('at rest'), rules: [], create_key: true })}`).digest('hex');
    assert.ok(rows.every((r) => r.request_hash !== plain));
    // And it still replays.
    const replay = await call(server, 'POST', '/applications', { key: server.key, body: appBody('at rest'), headers: { [HEADER]: key } });
    assert.equal(replay.headers.get('svc-idempotent-replayed'), 'true');
    assert.equal(replay.text, res.text);
  });

  it('replays an authorization (204, no body) instead of answering that the nonce is used up', async () => {
    const pub = await createApplication(server, { name: 'idem browser', type: 'public', permissions: ['token:create'] });
    const priv = await createApplication(server, { name: 'idem backend', type: 'private', permissions: ['session:authorize'] });
    const session = await call(server, 'POST', '/sessions', { key: pub.key });
    rememberSecret(session.body.session_key, session.body.nonce);
    const key = randomUUID();
    const body = { nonce: session.body.nonce, permissions: ['token:read'] };
    const first = await call(server, 'POST', '/sessions/authorize', { key: priv.key, body, headers: { [HEADER]: key } });
    assert.equal(first.status, 204);
    const replay = await call(server, 'POST', '/sessions/authorize', { key: priv.key, body, headers: { [HEADER]: key } });
    assert.equal(replay.status, 204);
    assert.equal(replay.headers.get('svc-idempotent-replayed'), 'true');
    assert.equal(replay.text, '');
    const fresh = await call(server, 'POST', '/sessions/authorize', { key: priv.key, body, headers: { [HEADER]: randomUUID() } });
    assert.equal(fresh.status, 404);
  });

  it('treats an expired but unswept entry as gone', async () => {
    const key = randomUUID();
    const entry = await entryAddedBy(async () => {
      const first = await call(server, 'POST', '/applications', { key: server.key, body: appBody('expired unswept'), headers: { [HEADER]: key } });
      assert.equal(first.status, 201);
    });
    await sql.query(`UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE key = $1`, [entry]);
    // Even a different body is accepted: the old entry no longer binds the key.
    const reuse = await call(server, 'POST', '/applications', { key: server.key, body: appBody('expired unswept 2'), headers: { [HEADER]: key } });
    assert.equal(reuse.status, 201);
    assert.equal(reuse.headers.get('svc-idempotent-replayed'), null);
    const replay = await call(server, 'POST', '/applications', { key: server.key, body: appBody('expired unswept 2'), headers: { [HEADER]: key } });
    assert.equal(replay.headers.get('svc-idempotent-replayed'), 'true');
    assert.equal(replay.text, reuse.text);
  });
});
