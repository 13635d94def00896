import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { uuidv7Floor } from '../../src/db/ids.ts';
import { call, createApplication, createOtherTenant } from '../helpers/http.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';
import { until } from '../helpers/until.ts';

/**
 * Webhook delivery end to end: a real server with fast job polling and tiny backoff, a
 * local receiver, tokens created through the API, and signatures checked with the exact
 * verifier docs/webhooks.md publishes.
 */

type Verify = (secret: string, headers: http.IncomingHttpHeaders, body: string) => any;

/** The `verify-webhook.mjs` code block of docs/webhooks.md, loaded as a module. */
async function documentedVerifier(): Promise<Verify> {
  const doc = fs.readFileSync(path.resolve(import.meta.dirname, '../../docs/webhooks.md'), 'utf8');
  const block = /<!-- verify-webhook\.mjs -->\s*```js\n([\s\S]*?)```/.exec(doc);
  assert.ok(block, 'docs/webhooks.md has the verify-webhook.mjs example');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-webhook-doc-'));
  const file = path.join(dir, 'verify-webhook.mjs');
  fs.writeFileSync(file, block[1]);
  const mod = await import(pathToFileURL(file).href);
  fs.rmSync(dir, { recursive: true, force: true });
  return mod.verifyWebhook;
}

const SECRET_DATA = 'top-secret-webhook-test-value-8841';
const PAN = '4242424242424242';

describe('webhook delivery', () => {
  let server: TestServer;
  let receiver: Receiver;
  let sql: pg.Client;
  let verify: Verify;
  let tokenKey: string;

  before(async () => {
    rememberSecret(SECRET_DATA, PAN);
    verify = await documentedVerifier();
    receiver = await startReceiver();
    server = await startTestServer({
      OUTBOUND_ALLOWLIST: '127.0.0.1',
      JOB_POLL_MS: '20',
      WEBHOOK_RETRY_SCHEDULE: '50ms,150ms',
      WEBHOOK_MAX_ATTEMPTS: '3',
      WEBHOOK_TIMEOUT_MS: '500',
    });
    sql = new pg.Client({ connectionString: server.config.databaseUrl });
    await sql.connect();
    const app = await createApplication(server, {
      name: 'backend',
      type: 'private',
      rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read', 'token:update', 'token:delete'] }],
    });
    tokenKey = app.key;
  });
  after(async () => {
    await sql?.end();
    await server?.stop();
    await receiver?.close();
  });

  async function webhook(p: string, body: Record<string, unknown> = {}) {
    const res = await call(server, 'POST', '/webhooks', { key: server.key, body: { name: p, url: receiver.url(p), events: ['token.created'], ...body } });
    assert.equal(res.status, 201, res.text);
    rememberSecret(res.body.secret);
    return res.body as { id: string; secret: string };
  }

  async function createToken(data: unknown = { secret: SECRET_DATA }, type = 'token') {
    const res = await call(server, 'POST', '/tokens', { key: tokenKey, body: { type, data } });
    assert.equal(res.status, 201, res.text);
    return res.body as { id: string };
  }

  async function deliveries(id: string) {
    const res = await call(server, 'GET', `/webhooks/${id}/deliveries?size=100`, { key: server.key });
    assert.equal(res.status, 200, res.text);
    return res.body as { pagination: { total_items: number }; data: any[] };
  }

  const jobsOf = async (webhookId: string) =>
    (await sql.query(`SELECT status, attempts, max_attempts, last_error, payload::text AS payload FROM jobs WHERE payload->>'webhook_id' = $1`, [webhookId])).rows;

  it('delivers a signed token.created event that the documented verifier accepts', async () => {
    const hook = await webhook('/ok');
    const token = await createToken();
    const [req] = await until(() => receiver.at('/ok').length > 0 && receiver.at('/ok'), 'delivery to /ok');

    assert.equal(req.headers['content-type'], 'application/json');
    const event = verify(hook.secret, req.headers, req.body);
    assert.equal(event.type, 'token.created');
    assert.equal(event.tenant_id, server.tenantId);
    assert.equal(event.id, req.headers['webhook-id']);
    assert.match(event.id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-/, 'event ids are UUIDv7');
    assert.ok(Math.abs(Date.parse(event.created_at) - Date.now()) < 60_000);
    assert.deepEqual(event.data, { id: token.id, type: 'token', containers: ['/general/high/'] });
    assert.deepEqual(Object.keys(event).sort(), ['created_at', 'data', 'id', 'tenant_id', 'type']);
    assert.match(req.headers['webhook-signature'] as string, /^v1,[A-Za-z0-9+/]{43}=$/);
    assert.ok(Math.abs(Number(req.headers['webhook-timestamp']) - Date.now() / 1000) < 60);

    // The verifier is not a rubber stamp.
    assert.throws(() => verify(hook.secret, req.headers, req.body.replace(token.id, 'another-token')), /signature/);
    const otherSecret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    assert.throws(() => verify(otherSecret, req.headers, req.body), /signature/);
    const stale = String(Number(req.headers['webhook-timestamp']) - 600);
    assert.throws(() => verify(hook.secret, { ...req.headers, 'webhook-timestamp': stale }, req.body), /timestamp/);
    assert.throws(() => verify(hook.secret, { ...req.headers, 'webhook-id': 'forged' }, req.body), /signature/);

    const list = await until(async () => {
      const d = await deliveries(hook.id);
      return d.data.length > 0 && d;
    }, 'delivery recorded');
    assert.equal(list.pagination.total_items, 1);
    const [attempt] = list.data;
    assert.equal(attempt.webhook_id, hook.id);
    assert.equal(attempt.event_id, event.id);
    assert.equal(attempt.event_type, 'token.created');
    assert.equal(attempt.attempt, 1);
    assert.equal(attempt.status, 'succeeded');
    assert.equal(attempt.response_status, 200);
    assert.equal(attempt.error, undefined);
    assert.ok(Number.isInteger(attempt.duration_ms) && attempt.duration_ms >= 0);
    await until(async () => (await jobsOf(hook.id))[0]?.status === 'done', 'job done');
    await sleep(200);
    assert.equal(receiver.at('/ok').length, 1, 'delivered once');
  });

  it('never puts token data in an event, a job or a delivery', async () => {
    const hook = await webhook('/nodata', { events: ['*'] });
    const token = await createToken({ number: PAN, expiration_month: 12, expiration_year: new Date().getUTCFullYear() + 2 }, 'card');
    const upd = await call(server, 'PATCH', `/tokens/${token.id}`, { key: tokenKey, body: { metadata: { note: 'x' } }, contentType: 'application/merge-patch+json' });
    assert.equal(upd.status, 200, upd.text);
    await until(() => receiver.at('/nodata').length >= 2, 'two deliveries');
    const bodies = receiver.at('/nodata').map((r) => r.body).join('\n');
    assert.ok(!bodies.includes(PAN) && !bodies.includes('424242'), 'no card number in deliveries');
    const types = receiver.at('/nodata').map((r) => verify(hook.secret, r.headers, r.body).type);
    assert.deepEqual(types.sort(), ['token.created', 'token.updated']);
    const { rows } = await sql.query(`SELECT payload::text AS p FROM jobs UNION ALL SELECT payload::text FROM events`);
    const stored = rows.map((r) => r.p).join('\n');
    assert.ok(!stored.includes(PAN) && !stored.includes(SECRET_DATA), 'no token data in jobs or events');
    assert.ok(!stored.includes('whsec_'), 'no webhook secret in jobs or events');
  });

  it('delivers the reactor events and token.expired, each carrying what the catalogue says', async () => {
    const hook = await webhook('/every', { events: ['reactor.invoked', 'reactor.completed', 'reactor.failed', 'token.expired'] });
    const invoker = await createApplication(server, { name: 'invoker', type: 'private', permissions: ['token:use'] });
    const reactor = async (name: string, code: string) => {
      const res = await call(server, 'POST', '/reactors', { key: server.key, body: { name, code, configuration: {} } });
      assert.equal(res.status, 201, res.text);
      return res.body.id as string;
    };
    const ok = await reactor('ok', 'module.exports = async () => ({ raw: { ok: true } });');
    const bad = await reactor('bad', "module.exports = async () => { throw new Error('nope'); };");
    assert.equal((await call(server, 'POST', `/reactors/${ok}/react`, { key: invoker.key, body: { args: {} } })).status, 200);
    assert.equal((await call(server, 'POST', `/reactors/${bad}/react`, { key: invoker.key, body: { args: {} } })).status, 422);
    const accepted = await call(server, 'POST', `/reactors/${ok}/react-async`, { key: invoker.key, body: { args: {} } });
    assert.equal(accepted.status, 202, accepted.text);
    const asyncId = accepted.body.asyncReactorRequestId;

    const expiring = await call(server, 'POST', '/tokens', { key: tokenKey, body: { type: 'token', data: { secret: SECRET_DATA }, expires_at: new Date(Date.now() + 300).toISOString() } });
    assert.equal(expiring.status, 201, expiring.text);
    await sleep(400);
    assert.ok((await server.running.services.tokens.sweepExpired()) >= 1);

    await until(() => receiver.at('/every').length >= 7, 'seven deliveries');
    await sleep(200);
    const events = receiver.at('/every').map((r) => verify(hook.secret, r.headers, r.body));
    assert.equal(events.length, 7, 'nothing else: no token.created, which it did not subscribe to');
    const of = (type: string, reactorId?: string) => events.filter((e) => e.type === type && (!reactorId || e.data.reactor_id === reactorId));
    assert.equal(of('reactor.invoked', ok).length, 2);
    assert.equal(of('reactor.completed', ok).length, 2);
    assert.equal(of('reactor.invoked', bad).length, 1);
    assert.equal(of('reactor.failed', bad).length, 1);
    assert.ok(events.every((e) => e.tenant_id === server.tenantId));
    // Each run's events carry its request id; the asynchronous one's is the id react-async answered.
    const requestIds = (type: string) => of(type).map((e) => e.data.request_id).sort();
    assert.deepEqual(requestIds('reactor.invoked'), [...requestIds('reactor.completed'), ...requestIds('reactor.failed')].sort());
    assert.ok(requestIds('reactor.completed').includes(asyncId));
    assert.deepEqual(of('token.expired').map((e) => e.data), [{ id: expiring.body.id, type: 'token' }]);
  });

  it('retries a failing endpoint with backoff, records every attempt, then dead-letters', async () => {
    receiver.answer('/fail', () => 500);
    const hook = await webhook('/fail');
    await createToken();
    const job = await until(async () => {
      const [j] = await jobsOf(hook.id);
      return j?.status === 'dead' && j;
    }, 'dead-lettered delivery');
    assert.equal(job.attempts, 3);
    assert.equal(job.max_attempts, 3);
    assert.equal(job.last_error, 'endpoint answered HTTP 500');

    const reqs = receiver.at('/fail');
    assert.equal(reqs.length, 3);
    assert.equal(new Set(reqs.map((r) => r.headers['webhook-id'])).size, 1, 'every retry carries the same webhook-id');
    for (const r of reqs) verify(hook.secret, r.headers, r.body);
    // WEBHOOK_RETRY_SCHEDULE: at least nine tenths of 50 ms, then of 150 ms.
    assert.ok(reqs[1].at - reqs[0].at >= 45, `first wait ${reqs[1].at - reqs[0].at} ms`);
    assert.ok(reqs[2].at - reqs[1].at >= 135, `second wait ${reqs[2].at - reqs[1].at} ms`);

    const list = await deliveries(hook.id);
    assert.deepEqual(list.data.map((d) => d.attempt), [3, 2, 1], 'newest first');
    assert.ok(list.data.every((d) => d.status === 'failed' && d.response_status === 500 && d.error === undefined));
    await sleep(300);
    assert.equal(receiver.at('/fail').length, 3, 'a dead delivery is not tried again');
  });

  it('a delivery that fails and then succeeds is retried until delivered', async () => {
    receiver.answer('/flaky', (n) => (n === 1 ? 503 : 204));
    const hook = await webhook('/flaky');
    await createToken();
    await until(async () => (await jobsOf(hook.id))[0]?.status === 'done', 'delivered after a retry');
    const list = await deliveries(hook.id);
    assert.deepEqual(list.data.map((d) => [d.attempt, d.status, d.response_status]), [[2, 'succeeded', 204], [1, 'failed', 503]]);
  });

  it('records a timeout as the error of an attempt', async () => {
    receiver.answer('/hang', () => 'hang');
    const hook = await webhook('/hang');
    await createToken();
    const list = await until(async () => {
      const d = await deliveries(hook.id);
      return d.data.length > 0 && d;
    }, 'timed-out attempt recorded');
    assert.equal(list.data[0].status, 'failed');
    assert.equal(list.data[0].error, 'timeout');
    assert.equal(list.data[0].response_status, undefined);
    assert.ok(list.data[0].duration_ms >= 400);
    // Not waiting for the rest: stop it here so the other tests are not slowed down.
    await call(server, 'DELETE', `/webhooks/${hook.id}`, { key: server.key });
  });

  it('sends nothing to disabled webhooks, to unsubscribed types, or for another tenant\'s events', async () => {
    const disabled = await webhook('/disabled', { events: ['*'], status: 'disabled' });
    const unsubscribed = await webhook('/unsub', { events: ['token.deleted'] });
    const watcher = await webhook('/watch', { events: ['*'] });
    const token = await createToken();

    // Another tenant's token: only that tenant's webhooks could hear of it, and it has none.
    const other = await createOtherTenant(server);
    const otherApp = await call(server, 'POST', '/applications', {
      key: other.api_key,
      body: { name: 'other backend', type: 'private', rules: [{ priority: 1, container: '/', permissions: ['token:create'] }] },
    });
    rememberSecret(otherApp.body.key);
    const otherToken = await call(server, 'POST', '/tokens', { key: otherApp.body.key, body: { type: 'token', data: { secret: SECRET_DATA } } });
    assert.equal(otherToken.status, 201, otherToken.text);

    await until(() => receiver.at('/watch').length >= 1, 'delivery to the watcher');
    await sleep(400);
    assert.equal(receiver.at('/disabled').length, 0);
    assert.equal(receiver.at('/unsub').length, 0);
    assert.equal((await jobsOf(disabled.id)).length, 0, 'no job queued for a disabled webhook');
    assert.equal((await jobsOf(unsubscribed.id)).length, 0, 'no job queued for an unsubscribed type');
    const heard = receiver.at('/watch').map((r) => verify(watcher.secret, r.headers, r.body));
    assert.deepEqual(heard.map((e) => [e.type, e.tenant_id, e.data.id]), [['token.created', server.tenantId, token.id]]);

    // The subscribed type does arrive.
    const del = await call(server, 'DELETE', `/tokens/${token.id}`, { key: tokenKey });
    assert.equal(del.status, 204, del.text);
    const [got] = await until(() => receiver.at('/unsub').length > 0 && receiver.at('/unsub'), 'token.deleted delivery');
    const event = verify(unsubscribed.secret, got.headers, got.body);
    assert.equal(event.type, 'token.deleted');
    assert.equal(event.data.id, token.id);
  });

  it('drops queued deliveries of a webhook disabled before they ran', async () => {
    // The first attempt is held open until the webhook has been disabled, then fails.
    let release!: (status: number) => void;
    const held = new Promise<number>((r) => (release = r));
    receiver.answer('/late', (n) => (n === 1 ? held : 500));
    const paused = await webhook('/late');
    await createToken();
    await until(() => receiver.at('/late').length >= 1, 'first attempt');
    const put = await call(server, 'PUT', `/webhooks/${paused.id}`, {
      key: server.key,
      body: { name: 'late', url: receiver.url('/late'), events: ['token.created'], status: 'disabled' },
    });
    assert.equal(put.status, 200, put.text);
    release(500);
    // The retry finds the webhook disabled and ends quietly.
    const [job] = await until(async () => {
      const rows = await jobsOf(paused.id);
      return rows[0]?.status === 'done' && rows;
    }, 'retry dropped');
    assert.equal(job.attempts, 2);
    assert.equal(receiver.at('/late').length, 1);
    assert.deepEqual((await deliveries(paused.id)).data.map((d) => [d.attempt, d.response_status]), [[1, 500]]);
  });

  it('drops queued deliveries of a webhook deleted before they ran', async () => {
    let release!: (status: number) => void;
    const held = new Promise<number>((r) => (release = r));
    receiver.answer('/gone', (n) => (n === 1 ? held : 500));
    const doomed = await webhook('/gone');
    await createToken();
    await until(() => receiver.at('/gone').length >= 1, 'first attempt');
    const jobId = (await sql.query(`SELECT id FROM jobs WHERE payload->>'webhook_id' = $1`, [doomed.id])).rows[0].id;
    assert.equal((await call(server, 'DELETE', `/webhooks/${doomed.id}`, { key: server.key })).status, 204);
    release(500);
    await until(async () => (await sql.query(`SELECT status FROM jobs WHERE id = $1`, [jobId])).rows[0]?.status === 'done', 'job ended');
    assert.equal(receiver.at('/gone').length, 1);
    const left = await sql.query(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE webhook_id = $1`, [doomed.id]);
    assert.equal(left.rows[0].n, 0, 'its delivery records went with it');
  });

  it('the sweep deletes events past their retention and keeps the rest', async () => {
    const token = await createToken();
    const mine = async () => (await sql.query(`SELECT id FROM events WHERE entity_id = $1`, [token.id])).rows.map((r) => r.id as string);
    assert.equal((await mine()).length, 1);
    // An event of 31 days ago, as the sweep sees age: by the time in its UUIDv7 id.
    const old = uuidv7Floor(Date.now() - 31 * 86_400_000).replace(/0000-0000-000000000000$/, '7000-8000-000000000001');
    await sql.query(`INSERT INTO events (id, tenant_id, type, entity_id, payload) VALUES ($1, $2, 'token.created', $3, '{}')`, [old, server.tenantId, token.id]);
    assert.equal((await mine()).length, 2);
    assert.ok((await server.running.services.events.sweep(30)) >= 1);
    assert.deepEqual((await mine()).filter((id) => id === old), [], 'the old event is gone');
    assert.equal((await mine()).length, 1, 'the fresh one is kept');
  });

  it('the sweep deletes delivery records past their retention', async () => {
    const hook = await webhook('/swept');
    await createToken();
    await until(async () => (await deliveries(hook.id)).data.length === 1, 'delivery recorded');
    assert.equal(await server.running.services.webhooks.sweepDeliveries(30), 0, 'a fresh record is kept');
    await sql.query(`UPDATE webhook_deliveries SET created_at = now() - interval '31 days' WHERE webhook_id = $1`, [hook.id]);
    assert.ok((await server.running.services.webhooks.sweepDeliveries(30)) >= 1);
    assert.equal((await deliveries(hook.id)).pagination.total_items, 0);
  });

  it('by default a failed delivery waits 5 s, the first step of the Standard Webhooks schedule', async () => {
    // A server of its own with the default WEBHOOK_RETRY_SCHEDULE.
    const plain = await startTestServer({ JOB_POLL_MS: '20', OUTBOUND_ALLOWLIST: '127.0.0.1' });
    const db = new pg.Client({ connectionString: plain.config.databaseUrl });
    await db.connect();
    try {
      receiver.answer('/down', () => 503);
      const hookRes = await call(plain, 'POST', '/webhooks', { key: plain.key, body: { name: 'down', url: receiver.url('/down'), events: ['token.created'] } });
      assert.equal(hookRes.status, 201, hookRes.text);
      rememberSecret(hookRes.body.secret);
      const app = await createApplication(plain, { name: 'd', type: 'private', rules: [{ priority: 1, container: '/', permissions: ['token:create'] }] });
      assert.equal((await call(plain, 'POST', '/tokens', { key: app.key, body: { type: 'token', data: 'x' } })).status, 201);
      const job = await until(async () => {
        const [j] = (await db.query(`SELECT attempts, status, run_at FROM jobs WHERE payload->>'webhook_id' = $1`, [hookRes.body.id])).rows;
        return j?.attempts === 1 && j.status === 'pending' && j;
      }, 'the first attempt failed');
      const failedAt = receiver.at('/down')[0].at;
      const wait = job.run_at.getTime() - failedAt;
      assert.ok(wait >= 4400 && wait <= 5200, `the retry is due ${wait} ms after the failed attempt`);
    } finally {
      await db.end();
      await plain.stop();
    }
  });

  it('records a blocked destination when a host name resolves to an internal address', async () => {
    // A server of its own without OUTBOUND_ALLOWLIST: loopback is off limits there.
    const blocked = await startTestServer({ JOB_POLL_MS: '20', WEBHOOK_RETRY_SCHEDULE: '50ms', WEBHOOK_MAX_ATTEMPTS: '2' });
    try {
      const hookRes = await call(blocked, 'POST', '/webhooks', {
        key: blocked.key,
        body: { name: 'sneaky', url: receiver.url('/sneaky').replace('127.0.0.1', 'localhost'), events: ['token.created'] },
      });
      assert.equal(hookRes.status, 201, 'a host name passes at create time; it is checked on every delivery');
      rememberSecret(hookRes.body.secret);
      const app = await createApplication(blocked, { name: 'b', type: 'private', rules: [{ priority: 1, container: '/', permissions: ['token:create'] }] });
      const tok = await call(blocked, 'POST', '/tokens', { key: app.key, body: { type: 'token', data: { secret: SECRET_DATA } } });
      assert.equal(tok.status, 201, tok.text);
      const list = await until(async () => {
        const res = await call(blocked, 'GET', `/webhooks/${hookRes.body.id}/deliveries`, { key: blocked.key });
        return res.body.data.length >= 2 && res.body;
      }, 'blocked attempts recorded');
      assert.ok(list.data.every((d: any) => d.status === 'failed' && d.error === 'blocked_address'), JSON.stringify(list.data));
      assert.equal(receiver.at('/sneaky').length, 0, 'the internal endpoint got nothing');
    } finally {
      await blocked.stop();
    }
  });
});
