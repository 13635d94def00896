import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { alive, killServed, runCli, serve, type Served } from '../helpers/cli.ts';
import { call } from '../helpers/http.ts';
import { createTestDatabase, rememberSecret } from '../helpers/server.ts';
import { parseMetrics, valueOf } from '../helpers/metrics.ts';

/**
 * `coffer serve --workers N` (node:cluster): the primary owns the embedded database and the
 * first-start work, the workers share one port, the idempotency lock holds across them,
 * metrics are summed in the primary, a dead worker is restarted, and SIGTERM stops
 * everything in order. The cluster decides which worker gets a connection, so checks that
 * must address one process in particular (revocation) are in processes.test.ts.
 */

const dirs: string[] = [];
function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-cluster-'));
  dirs.push(dir);
  return dir;
}

after(() => {
  killServed();
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

type LogLine = { pid: number; msg: string; worker?: number; reqId?: string; [k: string]: unknown };
const logLines = (served: Served): LogLine[] =>
  served.stdout().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as LogLine);

/** One request on a connection of its own, so that the cluster may hand it to any worker. */
function fresh(url: string, method: string, p: string, opts: { headers?: Record<string, string>; body?: unknown } = {}) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: any }>((resolve, reject) => {
    const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const req = http.request(`${url}${p}`, {
      method,
      agent: false,
      headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...opts.headers },
    }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text && /json/.test(res.headers['content-type'] ?? '') ? JSON.parse(text) : text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function waitFor<T>(what: string, check: () => T | undefined | false, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = check();
    if (value) return value;
    if (Date.now() > end) throw new Error(`${what}: not reached in time`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('coffer serve --workers', () => {
  it('refuses a worker count outside 1 to 64, and a cluster without METRICS_PORT when metrics are on', async () => {
    const dataDir = tempDir();
    const counts = ['0', '65', 'two'];
    const results = await Promise.all(counts.map((n) => runCli(['serve', '--workers', n], { DATA_DIR: dataDir })));
    results.forEach((r, i) => {
      assert.equal(r.code, 1, r.stderr);
      assert.ok(r.stderr.includes(`--workers must be a whole number from 1 to 64 (got "${counts[i]}")`), r.stderr);
    });
    const metrics = await runCli(['serve', '--workers', '2'], { DATA_DIR: dataDir, METRICS_TOKEN: randomUUID() });
    assert.equal(metrics.code, 1);
    assert.match(metrics.stderr, /METRICS_PORT is required with --workers 2/);
    assert.equal(fs.existsSync(path.join(dataDir, 'postgres')), false, 'nothing was started');
  });

  describe('two workers on the embedded database', () => {
    const dataDir = tempDir();
    const token = `metrics-${randomUUID()}`;
    let served: Served;
    let key: string;
    let metricsUrl: string;
    let workerPids: number[];

    before(async () => {
      rememberSecret(token);
      served = await serve({ DATA_DIR: dataDir, METRICS_TOKEN: token, METRICS_PORT: '0' }, ['--workers', '2']);
      assert.ok(served.firstKey, 'a first start prints the management key');
      key = served.firstKey;
      metricsUrl = (logLines(served).find((l) => l.msg === 'metrics listening')!.metrics_url) as string;
      // Each process writes its own log lines: a worker's may come after the primary's "coffer ready".
      workerPids = await waitFor('two workers ready', () => {
        const pids = logLines(served).filter((l) => l.msg === 'worker ready').map((l) => l.pid);
        return pids.length === 2 && pids;
      });
    });
    after(async () => {
      await served?.stop();
    });

    it('the primary starts the database once and forks two workers; the tenant key is made and printed once', () => {
      const primary = served.child.pid!;
      assert.equal(workerPids.length, 2);
      assert.equal(new Set([...workerPids, primary]).size, 3, 'two workers besides the primary');
      const lines = logLines(served);
      const started = lines.filter((l) => l.msg === 'embedded PostgreSQL started');
      assert.deepEqual(started.map((l) => l.pid), [primary], 'only the primary started a database');
      assert.ok(lines.filter((l) => l.msg === 'migration applied').every((l) => l.pid === primary));
      assert.equal(served.stderr().split('Coffer created tenant').length - 1, 1, 'the key was printed once');
      assert.ok(!served.stdout().includes(key), 'the key is not in the log stream');
      const ready = lines.find((l) => l.msg === 'coffer ready')!;
      assert.equal(ready.pid, primary);
      assert.equal(ready.workers, 2);
      assert.equal(ready.first_start, true);
    });

    it('serves on one port from both workers', async () => {
      const ids: string[] = Array.from({ length: 16 }, () => randomUUID());
      const res = await Promise.all(ids.map((id) => fresh(served.url, 'GET', '/tenants/self', { headers: { 'svc-api-key': key, 'x-request-id': id } })));
      assert.ok(res.every((r) => r.status === 200));
      const pids = await waitFor('request logs', () => {
        const seen = logLines(served).filter((l) => l.msg === 'request completed' && ids.includes(l.reqId!));
        return seen.length === ids.length && new Set(seen.map((l) => l.pid));
      });
      assert.deepEqual([...pids].sort(), [...workerPids].sort(), 'both workers answered');
    });

    it('an idempotency key holds across workers: one token, the same reply for every retry', async () => {
      const app = await call(served.url, 'POST', '/applications', {
        key,
        body: { name: 'writer', type: 'private', permissions: ['token:create', 'token:read'] },
      });
      assert.equal(app.status, 201, app.text);
      rememberSecret(app.body.key);
      const run = randomUUID();
      const idem = randomUUID();
      const body = { type: 'token', data: `cluster-secret-${run}`, metadata: { run } };
      rememberSecret(body.data);
      const requestIds: string[] = Array.from({ length: 12 }, () => randomUUID());
      const results = await Promise.all(requestIds.map((id) =>
        fresh(served.url, 'POST', '/tokens', { headers: { 'svc-api-key': app.body.key, 'svc-idempotency-key': idem, 'x-request-id': id }, body })));
      const created = results.filter((r) => r.status === 201);
      assert.ok(results.every((r) => r.status === 201 || r.status === 409), JSON.stringify(results.map((r) => r.status)));
      assert.ok(created.length >= 1);
      assert.equal(new Set(created.map((r) => r.body.id)).size, 1, 'every 201 names the same token');
      const replay = await fresh(served.url, 'POST', '/tokens', { headers: { 'svc-api-key': app.body.key, 'svc-idempotency-key': idem }, body });
      assert.equal(replay.status, 201);
      assert.equal(replay.headers['svc-idempotent-replayed'], 'true');
      assert.equal(replay.body.id, created[0].body.id);
      const list = await call(served.url, 'GET', `/tokens?metadata.run=${run}`, { key: app.body.key });
      assert.equal(list.status, 200, list.text);
      assert.equal(list.body.pagination.total_items, 1, 'one token');
      const pids = await waitFor('request logs', () => {
        const seen = logLines(served).filter((l) => l.msg === 'request completed' && requestIds.includes(l.reqId!));
        return seen.length === requestIds.length && new Set(seen.map((l) => l.pid));
      });
      assert.equal(pids.size, 2, 'the requests reached both workers');
    });

    it('the primary serves the metrics of all workers, summed', async () => {
      const pings = await Promise.all(Array.from({ length: 10 }, () => fresh(served.url, 'GET', '/ping')));
      assert.ok(pings.every((r) => r.status === 200));
      assert.equal((await fetch(metricsUrl)).status, 401);
      assert.equal((await call(served.url, 'GET', '/metrics', { headers: { authorization: `Bearer ${token}` } })).status, 404, 'not on the API port');
      const res = await fetch(metricsUrl, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(res.status, 200);
      const samples = parseMetrics(await res.text());
      assert.equal(valueOf(samples, 'coffer_http_requests_total', { method: 'GET', route: '/ping', status: '200' }), 10);
      assert.equal(valueOf(samples, 'coffer_cluster_workers'), 2);
      assert.equal(valueOf(samples, 'coffer_cluster_worker_restarts_total'), 0);
      // The queue is the same for every worker: reported once (max), not once per worker.
      assert.equal(valueOf(samples, 'coffer_jobs', { kind: 'webhook.deliver', status: 'pending' }), 0);
      assert.ok(valueOf(samples, 'coffer_db_pool_connections')! >= 2, 'pool figures add up over the workers');
    });

    it('restarts a worker that dies and keeps serving', async () => {
      const victim = workerPids[0];
      process.kill(victim, 'SIGKILL');
      const died = await waitFor('death logged', () => logLines(served).find((l) => l.msg === 'worker died; restarting it'));
      assert.equal(died.worker_pid, victim);
      assert.equal(died.signal, 'SIGKILL');
      assert.ok((died.restart_in_ms as number) >= 500);
      const restarted = await waitFor('restart logged', () => logLines(served).find((l) => l.msg === 'worker restarted'));
      assert.ok(!workerPids.includes(restarted.worker_pid as number));
      workerPids = [workerPids[1], restarted.worker_pid as number];
      const res = await Promise.all(Array.from({ length: 6 }, () => fresh(served.url, 'GET', '/tenants/self', { headers: { 'svc-api-key': key } })));
      assert.ok(res.every((r) => r.status === 200));
      const samples = parseMetrics(await (await fetch(metricsUrl, { headers: { authorization: `Bearer ${token}` } })).text());
      assert.equal(valueOf(samples, 'coffer_cluster_worker_restarts_total'), 1);
      assert.equal(valueOf(samples, 'coffer_cluster_workers'), 2);
    });

    it('on SIGTERM stops the workers gracefully, then the embedded database', async () => {
      const postmaster = Number(fs.readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
      assert.ok(alive(postmaster));
      assert.equal(await served.stop(), 0);
      await waitFor('the stopping lines', () => logLines(served).filter((l) => l.msg === 'worker shutting down').length >= 2, 2000);
      const stopping = logLines(served).filter((l) => l.msg === 'worker shutting down').map((l) => l.pid);
      assert.deepEqual(stopping.sort(), [...workerPids].sort(), 'each live worker stopped itself');
      for (const pid of workerPids) assert.equal(alive(pid), false);
      await waitFor('database stopped', () => !alive(postmaster), 5000);
      assert.equal(fs.existsSync(path.join(dataDir, 'postgres', 'postmaster.pid')), false);
    });
  });

  it('gives up, and exits 1, when a worker cannot start', async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as net.AddressInfo).port;
    const database = await createTestDatabase();
    try {
      await assert.rejects(
        serve({ DATABASE_URL: database.url, DATA_DIR: tempDir(), PORT: String(port) }, ['--workers', '2']),
        (err: Error) => /serve exited with 1/.test(err.message) && /a worker failed to start; stopping/.test(err.message) && /EADDRINUSE/.test(err.message),
      );
    } finally {
      blocker.close();
      await database.drop();
    }
  });
});
