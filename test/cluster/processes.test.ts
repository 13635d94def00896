import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { killServed, serve, type Served } from '../helpers/cli.ts';
import { call } from '../helpers/http.ts';
import { createTestDatabase, rememberSecret } from '../helpers/server.ts';

/**
 * Two separate `coffer serve` processes on one DATABASE_URL, as behind a load balancer
 * (docs/operations.md), each addressed by its own port: what one process does, the other
 * honours at once. The API-key cache is set to 300 s, so only the LISTEN/NOTIFY broadcast
 * can make the second process forget a key in time.
 *
 * Job claiming across processes is proven in test/db/jobs.test.ts ("two runners, each with
 * its own connection pool, run each of many jobs exactly once"); here only the split of
 * WORKERS=0 (A) and WORKERS=1 (B) is shown end to end.
 */

/** A destination that holds every request until released: the request that called it stays in flight. */
async function startHoldServer() {
  let arrived = 0;
  let onArrive: (() => void) | undefined;
  const waiting: http.ServerResponse[] = [];
  let answer: string | undefined;
  const server = http.createServer((req, res) => {
    arrived++;
    onArrive?.();
    if (answer !== undefined) res.writeHead(200, { 'content-type': 'application/json' }).end(answer);
    else waiting.push(res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hold`,
    get arrived() {
      return arrived;
    },
    waitForArrival: () => new Promise<void>((r) => (arrived > 0 ? r() : (onArrive = r))),
    release(body: unknown) {
      answer = JSON.stringify(body);
      for (const res of waiting.splice(0)) res.writeHead(200, { 'content-type': 'application/json' }).end(answer);
    },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

describe('two coffer processes on one database', () => {
  let a: Served;
  let b: Served;
  let key: string;
  let drop: () => Promise<void>;
  let hold: Awaited<ReturnType<typeof startHoldServer>>;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-processes-'));

  before(async () => {
    const database = await createTestDatabase();
    drop = database.drop;
    hold = await startHoldServer();
    // Separate hosts share the keyring through COFFER_KEYS (a key file in DATA_DIR is per host).
    const kek = randomBytes(32).toString('base64');
    rememberSecret(kek);
    const common = {
      DATABASE_URL: database.url,
      COFFER_KEYS: `shared:${kek}`,
      DATA_DIR: dataDir,
      AUTH_CACHE_SECONDS: '300',
      OUTBOUND_ALLOWLIST: '127.0.0.1',
      DATABASE_POOL_SIZE: '5',
    };
    // Started together on an empty database: the first-start tenant is made once, its key printed once.
    [a, b] = await Promise.all([serve({ ...common, WORKERS: '0' }), serve({ ...common, WORKERS: '1', JOB_POLL_MS: '50' })]);
    assert.notEqual(a.url, b.url);
    const printed = [a.firstKey, b.firstKey].filter((k) => k !== undefined);
    assert.equal(printed.length, 1, 'exactly one process created the tenant and printed its key');
    key = printed[0]!;
  });

  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    killServed();
    await hold?.close();
    await drop?.();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  async function application(body: Record<string, unknown>) {
    const res = await call(a.url, 'POST', '/applications', { key, body: { type: 'private', permissions: ['token:read'], ...body } });
    assert.equal(res.status, 201, res.text);
    rememberSecret(res.body.key);
    return res.body as { id: string; key: string };
  }

  async function reactor(code: string): Promise<string> {
    const res = await call(a.url, 'POST', '/reactors', { key, body: { name: 'r', code, configuration: {} } });
    assert.equal(res.status, 201, res.text);
    return res.body.id;
  }

  it('an idempotency key in flight on A gets 409 on B; once done, B replays A\'s response', async () => {
    const invoker = (await application({ name: 'invoker', permissions: ['token:use'] })).key;
    const id = await reactor('module.exports = async (req) => { const res = await fetch(req.args.url); return { raw: await res.json() }; };');
    const idem = randomUUID();
    const react = (server: Served, args: unknown) =>
      call(server.url, 'POST', `/reactors/${id}/react`, { key: invoker, body: { args }, headers: { 'svc-idempotency-key': idem } });

    const first = react(a, { url: hold.url });
    await hold.waitForArrival(); // A is inside the request, holding the key
    const during = await react(b, { url: hold.url });
    assert.equal(during.status, 409, during.text);
    assert.match(during.body.detail, /still being processed/);

    const nonce = randomUUID();
    hold.release({ nonce });
    const done = await first;
    assert.equal(done.status, 200, done.text);
    assert.deepEqual(done.body.raw, { nonce });

    for (const server of [b, a]) {
      const replay = await react(server, { url: hold.url });
      assert.equal(replay.status, 200, replay.text);
      assert.deepEqual(replay.body, done.body);
    }
    assert.equal(hold.arrived, 1, 'the code ran once; the replays ran nothing');

    const other = await react(b, { url: `${hold.url}?other` });
    assert.equal(other.status, 422, 'the key was used for a different request');
  });

  it('a key deleted through A is refused by B on the very next request', async () => {
    for (let i = 0; i < 5; i++) {
      const app = await application({ name: `revoked ${i}` });
      assert.equal((await call(b.url, 'GET', '/permissions', { key: app.key })).status, 200, 'B caches the key');
      const keys = await call(a.url, 'GET', `/applications/${app.id}/keys`, { key });
      assert.equal(keys.status, 200, keys.text);
      const deleted = await call(a.url, 'DELETE', `/applications/${app.id}/keys/${keys.body.data[0].id}`, { key });
      assert.equal(deleted.status, 204, deleted.text);
      const next = await call(b.url, 'GET', '/permissions', { key: app.key });
      assert.equal(next.status, 401, `iteration ${i}: B still accepted a deleted key`);
    }
    for (const server of [a, b]) assert.ok(!server.stdout().includes('barrier timed out'), 'every barrier was acknowledged');
  });

  it('an application deleted or narrowed through A takes effect on B at once', async () => {
    const doomed = await application({ name: 'doomed' });
    assert.equal((await call(b.url, 'GET', '/permissions', { key: doomed.key })).status, 200);
    assert.equal((await call(a.url, 'DELETE', `/applications/${doomed.id}`, { key })).status, 204);
    assert.equal((await call(b.url, 'GET', '/permissions', { key: doomed.key })).status, 401);

    const reader = await application({ name: 'reader', type: 'management', permissions: ['application:read'] });
    assert.equal((await call(b.url, 'GET', '/applications', { key: reader.key })).status, 200);
    const narrowed = await call(a.url, 'PUT', `/applications/${reader.id}`, { key, body: { name: 'reader', permissions: ['tenant:read'], rules: [] } });
    assert.equal(narrowed.status, 200, narrowed.text);
    assert.equal((await call(b.url, 'GET', '/applications', { key: reader.key })).status, 403);
  });

  it('an application expires on both processes at its expiry instant, cached or not', async () => {
    const expiresAt = new Date(Date.now() + 1500);
    const app = await application({ name: 'short-lived', expires_at: expiresAt.toISOString() });
    for (const server of [a, b]) assert.equal((await call(server.url, 'GET', '/permissions', { key: app.key })).status, 200);
    await new Promise((r) => setTimeout(r, expiresAt.getTime() - Date.now() + 20));
    for (const server of [b, a]) {
      const res = await call(server.url, 'GET', '/permissions', { key: app.key });
      assert.equal(res.status, 401);
      assert.match(res.body.detail, /expired/);
    }
  });

  it('a job enqueued by A (WORKERS=0) is run by B (WORKERS=1)', async () => {
    const invoker = (await application({ name: 'async invoker', permissions: ['token:use'] })).key;
    const id = await reactor(`module.exports = async () => ({ raw: { pid: 'ran' } });`);
    const accepted = await call(a.url, 'POST', `/reactors/${id}/react-async`, { key: invoker, body: {} });
    assert.equal(accepted.status, 202, accepted.text);
    const requestId = accepted.body.asyncReactorRequestId;
    const deadline = Date.now() + 15_000;
    for (;;) {
      const res = await call(a.url, 'GET', `/reactors/${id}/results/${requestId}`, { key: invoker });
      if (res.status === 200) {
        assert.deepEqual(res.body.raw, { pid: 'ran' });
        break;
      }
      assert.equal(res.status, 202, res.text);
      assert.ok(Date.now() < deadline, 'B never ran the job');
      await new Promise((r) => setTimeout(r, 100));
    }
  });
});
