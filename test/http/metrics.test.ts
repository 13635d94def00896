import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { enqueue } from '../../src/db/jobs.ts';
import { bearerMatches } from '../../src/http/metrics.ts';
import { call, createApplication } from '../helpers/http.ts';
import { parseMetrics, valueOf } from '../helpers/metrics.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * GET /metrics: off without METRICS_TOKEN, bearer-token protected with it, hidden from the
 * OpenAPI document; request, sandbox, job-queue and pool figures; METRICS_PORT moves it to
 * a listener of its own. (The cluster's aggregated view is in test/cluster/.)
 */

const TOKEN = `metrics-${randomUUID()}`;
rememberSecret(TOKEN);

const scrape = async (url: string, token = TOKEN) => {
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  const text = await res.text();
  return { text, samples: parseMetrics(text) };
};

describe('GET /metrics', () => {
  let server: TestServer;
  let plain: TestServer;
  let app: string;

  before(async () => {
    [server, plain] = await Promise.all([startTestServer({ METRICS_TOKEN: TOKEN, WORKERS: '0' }), startTestServer()]);
    app = (await createApplication(server, { name: 'user', type: 'private', permissions: ['token:read', 'token:use'] })).key;
  });
  after(async () => {
    await Promise.all([server?.stop(), plain?.stop()]);
  });

  it('does not exist without METRICS_TOKEN', async () => {
    const res = await call(plain, 'GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(res.status, 404);
    assert.equal(plain.running.services.metrics, undefined);
  });

  it('answers 401 problem+json without the right bearer token, API keys included', async () => {
    const cases: Record<string, string>[] = [{}, { authorization: `Bearer ${TOKEN}x` }, { authorization: `Bearer ${TOKEN.slice(0, -1)}` }, { authorization: `Basic ${TOKEN}` }, { authorization: 'Bearer ' }];
    for (const headers of cases) {
      const res = await call(server, 'GET', '/metrics', { headers });
      assert.equal(res.status, 401, JSON.stringify(headers));
      assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
      assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="metrics"');
      assert.match(res.body.detail, /metrics token/);
    }
    const withKey = await call(server, 'GET', '/metrics', { key: server.key });
    assert.equal(withKey.status, 401, 'the management key is not the metrics token');
  });

  it('is not in the OpenAPI document', async () => {
    const doc = await call(server, 'GET', '/openapi.json');
    assert.equal(doc.status, 200);
    assert.ok(!Object.keys(doc.body.paths).some((p) => p.includes('metrics')));
  });

  it('counts requests by route pattern and status, never by raw URL', async () => {
    const id = randomUUID();
    assert.equal((await call(server, 'GET', `/tokens/${id}`, { key: app })).status, 404);
    assert.equal((await call(server, 'GET', `/tokens/${id}`, { key: app })).status, 404);
    assert.equal((await call(server, 'GET', '/tenants/self', { key: server.key })).status, 200);
    assert.equal((await call(server, 'GET', `/no-such-route/${id}`)).status, 404);
    const { text, samples } = await scrape(`${server.url}/metrics`);
    assert.ok(!text.includes(id), 'no raw URL (nor its id) in any label');
    assert.equal(valueOf(samples, 'coffer_http_requests_total', { method: 'GET', route: '/tokens/:id', status: '404' }), 2);
    assert.equal(valueOf(samples, 'coffer_http_requests_total', { method: 'GET', route: '/tenants/self', status: '200' }), 1);
    assert.equal(valueOf(samples, 'coffer_http_requests_total', { route: 'unmatched', status: '404' }), 1);
    assert.equal(valueOf(samples, 'coffer_http_request_duration_seconds_count', { method: 'GET', route: '/tokens/:id', status: '404' }), 2);
    const inf = valueOf(samples, 'coffer_http_request_duration_seconds_bucket', { route: '/tokens/:id', status: '404', le: '+Inf' });
    assert.equal(inf, 2);
    assert.ok(valueOf(samples, 'coffer_http_request_duration_seconds_sum', { route: '/tokens/:id', status: '404' })! > 0);
    // The process's own figures come along (prom-client's defaults).
    assert.ok(valueOf(samples, 'process_resident_memory_bytes')! > 0);
  });

  it('times every sandbox run by purpose and outcome', async () => {
    const make = async (code: string) => {
      const res = await call(server, 'POST', '/reactors', { key: server.key, body: { name: 'm', code, configuration: {} } });
      assert.equal(res.status, 201, res.text);
      return res.body.id as string;
    };
    const ok = await make('module.exports = async () => ({ raw: { ok: true } });');
    const throws = await make('module.exports = async () => { throw new Error("no"); };');
    assert.equal((await call(server, 'POST', `/reactors/${ok}/react`, { key: app, body: {} })).status, 200);
    assert.equal((await call(server, 'POST', `/reactors/${ok}/react`, { key: app, body: {} })).status, 200);
    const failed = await call(server, 'POST', `/reactors/${throws}/react`, { key: app, body: {} });
    assert.equal(failed.status, 422, failed.text);
    const { samples } = await scrape(`${server.url}/metrics`);
    assert.equal(valueOf(samples, 'coffer_sandbox_runs_total', { purpose: 'reactor', outcome: 'ok' }), 2);
    assert.equal(valueOf(samples, 'coffer_sandbox_runs_total', { purpose: 'reactor', outcome: 'user_error' }), 1);
    assert.equal(valueOf(samples, 'coffer_sandbox_run_duration_seconds_count', { purpose: 'reactor', outcome: 'ok' }), 2);
    assert.ok(valueOf(samples, 'coffer_sandbox_run_duration_seconds_sum', { purpose: 'reactor', outcome: 'ok' })! > 0);
    assert.ok(valueOf(samples, 'coffer_sandbox_warm_isolates')! >= 1, 'the isolates that ran are kept warm');
    assert.ok(valueOf(samples, 'coffer_sandbox_processes')! >= 1, 'the code ran in a sandbox process, still there');
    assert.equal(valueOf(samples, 'coffer_sandbox_process_ends'), 0);
    assert.equal(valueOf(samples, 'coffer_sandbox_runs_active'), 0);
  });

  it('reports the job queue by kind and status, with the age of the oldest due job', async () => {
    const db = server.running.database.db;
    // WORKERS=0: nothing claims these.
    const minuteAgo = new Date(Date.now() - 60_000);
    await enqueue(db, null, 'metrics.test', {}, { runAt: minuteAgo });
    await enqueue(db, null, 'metrics.test', {}, { runAt: new Date(Date.now() - 1000) });
    await enqueue(db, null, 'metrics.test', {}, { runAt: new Date(Date.now() + 3_600_000) });
    await db.query(`INSERT INTO jobs (id, kind, status, max_attempts, finished_at) VALUES ($1, 'metrics.test', 'dead', 1, now())`, [randomUUID()]);
    const { samples } = await scrape(`${server.url}/metrics`);
    assert.equal(valueOf(samples, 'coffer_jobs', { kind: 'metrics.test', status: 'pending' }), 3);
    assert.equal(valueOf(samples, 'coffer_jobs', { kind: 'metrics.test', status: 'dead' }), 1);
    assert.equal(valueOf(samples, 'coffer_jobs_due', { kind: 'metrics.test', status: 'pending' }), 2);
    const age = valueOf(samples, 'coffer_jobs_oldest_due_age_seconds', { kind: 'metrics.test', status: 'pending' })!;
    assert.ok(age >= 59 && age < 120, `oldest due age ${age}`);
    // Kinds this process handles are always reported, at zero when idle.
    assert.equal(valueOf(samples, 'coffer_jobs', { kind: 'webhook.deliver', status: 'pending' }), 0);
    assert.equal(valueOf(samples, 'coffer_jobs_oldest_due_age_seconds', { kind: 'reactor.run', status: 'pending' }), 0);
  });

  it('reports the database pool', async () => {
    const { samples } = await scrape(`${server.url}/metrics`);
    assert.equal(valueOf(samples, 'coffer_db_pool_max_connections'), 10);
    const total = valueOf(samples, 'coffer_db_pool_connections')!;
    const idle = valueOf(samples, 'coffer_db_pool_idle_connections')!;
    assert.ok(total >= 1 && total <= 10 && idle <= total, `total ${total}, idle ${idle}`);
    assert.equal(valueOf(samples, 'coffer_db_pool_waiting_requests'), 0);
  });

  it('reports the group commit: writes per statement, statement times by outcome, writes waiting', async () => {
    const figures = async () => {
      const { samples } = await scrape(`${server.url}/metrics`);
      return {
        writes: valueOf(samples, 'coffer_db_group_commit_writes_sum') ?? 0,
        statements: valueOf(samples, 'coffer_db_group_commit_writes_count') ?? 0,
        timed: valueOf(samples, 'coffer_db_group_commit_duration_seconds_count', { outcome: 'ok' }) ?? 0,
        seconds: valueOf(samples, 'coffer_db_group_commit_duration_seconds_sum', { outcome: 'ok' }) ?? 0,
        queued: valueOf(samples, 'coffer_db_group_commit_queued_writes'),
      };
    };
    const writer = (await createApplication(server, { name: 'writer', type: 'private', permissions: ['token:create'] })).key;
    const before = await figures();
    const card = { type: 'card', data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2099 } };
    const created = await Promise.all(Array.from({ length: 8 }, () => call(server, 'POST', '/tokens', { key: writer, body: card })));
    assert.deepEqual(created.map((r) => r.status), Array(8).fill(201));
    const after = await figures();
    // Each create is one group-committed write: its token, audit entry and event together.
    assert.equal(after.writes - before.writes, 8);
    const statements = after.statements - before.statements;
    assert.ok(statements >= 1 && statements <= 8, `${statements} statements`);
    assert.equal(after.timed - before.timed, statements, 'every statement timed, and all succeeded');
    assert.ok(after.seconds > before.seconds);
    assert.equal(after.queued, 0, 'nothing waits once every write has been answered');
  });
});

describe('METRICS_PORT', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ METRICS_TOKEN: TOKEN, METRICS_PORT: '0', WORKERS: '0' });
  });
  after(async () => {
    await server?.stop();
  });

  it('serves /metrics on its own listener, not on the API port', async () => {
    const url = server.running.metricsUrl!;
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    assert.notEqual(new URL(url).port, new URL(server.url).port);
    assert.equal((await call(server, 'GET', '/tenants/self', { key: server.key })).status, 200);
    assert.equal((await call(server, 'GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } })).status, 404);
    const { samples } = await scrape(url);
    assert.equal(valueOf(samples, 'coffer_http_requests_total', { route: '/tenants/self', status: '200' }), 1);

    const denied = await fetch(url, { headers: { authorization: 'Bearer wrong-token-of-some-length' } });
    assert.equal(denied.status, 401);
    assert.equal(denied.headers.get('content-type'), 'application/problem+json');
    assert.equal((await fetch(url)).status, 401);
    assert.equal((await fetch(url.replace('/metrics', '/other'), { headers: { authorization: `Bearer ${TOKEN}` } })).status, 404);
  });
});

describe('metrics settings', () => {
  it('compares the bearer token exactly', () => {
    assert.equal(bearerMatches(`Bearer ${TOKEN}`, TOKEN), true);
    assert.equal(bearerMatches(`bearer  ${TOKEN}`, TOKEN), true);
    assert.equal(bearerMatches([`Bearer ${TOKEN}`], TOKEN), true);
    for (const h of [undefined, '', 'Bearer', `Bearer ${TOKEN} x`, `Token ${TOKEN}`, `Bearer ${TOKEN.toUpperCase()}`, TOKEN]) {
      assert.equal(bearerMatches(h, TOKEN), false, String(h));
    }
  });

  it('refuses a short token and a port without a token', () => {
    assert.throws(() => loadConfig({ METRICS_TOKEN: 'short' }), (err: unknown) => err instanceof ConfigError && /METRICS_TOKEN must be at least 16/.test(err.message));
    assert.throws(() => loadConfig({ METRICS_PORT: '9464' }), (err: unknown) => err instanceof ConfigError && /METRICS_PORT is set but METRICS_TOKEN is not/.test(err.message));
    assert.throws(() => loadConfig({ METRICS_TOKEN: TOKEN, METRICS_PORT: '70000' }), /METRICS_PORT must be a whole number/);
    assert.throws(() => loadConfig({ METRICS_TOKEN: TOKEN, METRICS_PORT: '8080' }), /METRICS_PORT must differ from PORT \(both are 8080\)/);
    assert.throws(() => loadConfig({ METRICS_TOKEN: TOKEN, PORT: '9464', METRICS_PORT: '9464' }), /METRICS_PORT must differ from PORT/);
    assert.equal(loadConfig({ METRICS_TOKEN: TOKEN, PORT: '0', METRICS_PORT: '0' }).metricsPort, 0, 'two free ports are picked');
    const config = loadConfig({ METRICS_TOKEN: TOKEN, METRICS_PORT: '9464' });
    assert.equal(config.metricsToken, TOKEN);
    assert.equal(config.metricsPort, 9464);
    assert.equal(loadConfig({}).metricsToken, undefined);
  });
});
