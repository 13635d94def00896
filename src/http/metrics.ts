import { createHash, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { AggregatorRegistry, collectDefaultMetrics, Counter, Gauge, Histogram, Registry, type PrometheusContentType } from 'prom-client';
import type { Database } from '../db/database.ts';
import type { StatementObserver } from '../db/group-commit.ts';
import { queueStats, type QueueStats } from '../db/jobs.ts';
import type { Logger } from '../logger.ts';
import type { RunObserver } from '../sandbox/index.ts';
import { ApiError } from './errors.ts';

/**
 * Prometheus metrics (docs/operations.md lists them). One registry per process, never
 * prom-client's global one, so several servers in one process (the tests) stay apart.
 * Nothing here is computed per request beyond two label lookups; the queue and the pool
 * are read when scraped.
 */
export type Rendered = { contentType: string; body: string };

const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
// A group commit's writes: one alone when idle, up to the batch limit (256) under load.
const GROUP_COMMIT_WRITE_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256];
// A statement answers in well under a millisecond on an idle local database, in tens of milliseconds under load.
const GROUP_COMMIT_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
// A warm run of small code takes a fraction of a millisecond: the first bounds tell those apart.
const SANDBOX_BUCKETS = [0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

type SandboxGauges = { readonly warmIsolates: number; readonly processes: number; readonly restarts: number; readonly runs: { active: number; waiting: number } };

export class Metrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'method' | 'route' | 'status'>;
  private readonly requestSeconds: Histogram<'method' | 'route' | 'status'>;
  private readonly runs: Counter<'purpose' | 'outcome'>;
  private readonly runSeconds: Histogram<'purpose' | 'outcome'>;
  private readonly groupCommitWrites: Histogram;
  private readonly groupCommitSeconds: Histogram<'outcome'>;
  private sandbox: SandboxGauges = { warmIsolates: 0, processes: 0, restarts: 0, runs: { active: 0, waiting: 0 } };
  private queuedWrites: () => number = () => 0;
  private snapshot: Promise<QueueStats[] | undefined> | undefined;

  constructor(deps: { db: Database; log: Logger; jobKinds: () => string[] }) {
    const { db, log, jobKinds } = deps;
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });

    this.requests = new Counter({
      name: 'coffer_http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status code.',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
    this.requestSeconds = new Histogram({
      name: 'coffer_http_request_duration_seconds',
      help: 'Time from receiving a request to finishing its response, by method, route pattern and status code.',
      labelNames: ['method', 'route', 'status'],
      buckets: HTTP_BUCKETS,
      registers,
    });
    this.runs = new Counter({
      name: 'coffer_sandbox_runs_total',
      help: 'Runs of user code in the sandbox, by purpose and outcome (ok, or the failure kind).',
      labelNames: ['purpose', 'outcome'],
      registers,
    });
    this.runSeconds = new Histogram({
      name: 'coffer_sandbox_run_duration_seconds',
      help: 'Wall time of sandbox runs, by purpose and outcome.',
      labelNames: ['purpose', 'outcome'],
      buckets: SANDBOX_BUCKETS,
      registers,
    });
    this.groupCommitWrites = new Histogram({
      name: 'coffer_db_group_commit_writes',
      help: 'Writes carried by each group-commit statement (src/db/group-commit.ts).',
      buckets: GROUP_COMMIT_WRITE_BUCKETS,
      registers,
    });
    this.groupCommitSeconds = new Histogram({
      name: 'coffer_db_group_commit_duration_seconds',
      help: 'Time from sending a group-commit statement until its answer was read, by outcome (ok or error).',
      labelNames: ['outcome'],
      buckets: GROUP_COMMIT_BUCKETS,
      registers,
    });
    /** A gauge whose value is read when scraped. */
    const readGauge = (name: string, help: string, read: () => number) =>
      new Gauge({ name, help, registers, collect() { this.set(read()); } });
    readGauge('coffer_db_group_commit_queued_writes', 'Writes waiting for the next group-commit statement.', () => this.queuedWrites());
    readGauge('coffer_sandbox_warm_isolates', 'Idle isolates kept warm for the next run.', () => this.sandbox.warmIsolates);
    readGauge('coffer_sandbox_processes', 'Sandbox processes running user code now.', () => this.sandbox.processes);
    readGauge('coffer_sandbox_process_ends', 'Sandbox processes that ended unexpectedly (out of memory, crashed or stuck) since start.', () => this.sandbox.restarts);
    readGauge('coffer_sandbox_runs_active', 'Runs of user code in progress.', () => this.sandbox.runs.active);
    readGauge('coffer_sandbox_runs_waiting', 'Runs of user code waiting for their tenant\'s share.', () => this.sandbox.runs.waiting);

    // Read before the queue gauges below, whose query would otherwise count itself as pool use.
    readGauge('coffer_db_pool_connections', 'Connections open in the database pool.', () => db.pool.totalCount);
    readGauge('coffer_db_pool_idle_connections', 'Open pool connections not in use.', () => db.pool.idleCount);
    readGauge('coffer_db_pool_waiting_requests', 'Queries waiting for a pool connection.', () => db.pool.waitingCount);
    readGauge('coffer_db_pool_max_connections', 'Size limit of the pool (DATABASE_POOL_SIZE).', () => db.pool.options.max ?? 10);

    // Every process sees the same queue, so the cluster view takes the largest figure, not the sum.
    const self = this;
    const queueGauge = (name: string, help: string, statuses: QueueStats['status'][], pick: (s: QueueStats) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ['kind', 'status'],
        aggregator: 'max',
        registers,
        async collect() {
          const rows = await self.queue(db, log);
          this.reset();
          if (!rows) return; // the database did not answer: no figure rather than a wrong one
          // Known kinds always have a figure, so an alert on "> 0" never meets a missing series.
          for (const kind of jobKinds()) for (const status of statuses) this.set({ kind, status }, 0);
          for (const row of rows) if (statuses.includes(row.status)) this.set({ kind: row.kind, status: row.status }, pick(row));
        },
      });
    queueGauge('coffer_jobs', 'Background jobs by kind and status (finished ones are not counted).', ['pending', 'running', 'dead'], (s) => s.jobs);
    queueGauge('coffer_jobs_due', 'Jobs a worker could claim now: pending and due, or running with a lapsed lease.', ['pending', 'running'], (s) => s.due);
    queueGauge(
      'coffer_jobs_oldest_due_age_seconds',
      'How long the oldest claimable job has waited for a worker (since its run_at, or since its lease lapsed).',
      ['pending', 'running'],
      (s) => s.oldestDueSeconds,
    );
  }

  /** One query per scrape: the gauges' collects all start in the same tick and share it while it runs. */
  private queue(db: Database, log: Logger): Promise<QueueStats[] | undefined> {
    this.snapshot ??= queueStats(db)
      .catch((err: Error) => {
        log.warn({ err: err.message }, 'metrics: could not read the jobs queue');
        return undefined;
      })
      .finally(() => {
        this.snapshot = undefined;
      });
    return this.snapshot;
  }

  /** Hands the sandbox its run observer: every reactor and proxy run is counted in this one place. */
  readonly observeRun: RunObserver = (request, result) => {
    const labels = { purpose: request.purpose ?? 'unspecified', outcome: result.ok ? 'ok' : result.error.kind };
    this.runs.inc(labels);
    this.runSeconds.observe(labels, result.durationMs / 1000);
  };

  watchSandbox(sandbox: SandboxGauges): void {
    this.sandbox = sandbox;
  }

  /** Hands the group commit its statement observer. */
  readonly observeGroupCommit: StatementObserver = ({ writes, seconds, ok }) => {
    this.groupCommitWrites.observe(writes);
    this.groupCommitSeconds.observe({ outcome: ok ? 'ok' : 'error' }, seconds);
  };

  watchGroupCommit(groupCommit: { readonly queuedWrites: number }): void {
    this.queuedWrites = () => groupCommit.queuedWrites;
  }

  /**
   * Counts every response by the route's pattern (`/tokens/:id`), never the raw URL, which
   * would give each id a series of its own; requests no route matched share `unmatched`.
   * Added before the routes so that it sees all of them.
   */
  instrument(app: FastifyInstance): void {
    app.addHook('onResponse', (request, reply, done) => {
      const labels = { method: request.method, route: request.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) };
      this.requests.inc(labels);
      this.requestSeconds.observe(labels, reply.elapsedTime / 1000);
      done();
    });
  }

  async render(): Promise<Rendered> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  /** In a cluster worker: answer the primary's requests with this registry (it aggregates all workers). */
  answerPrimary(): void {
    prepareWorkerMetrics();
    AggregatorRegistry.setRegistries([this.registry]);
  }
}

/**
 * In a cluster worker, before its server exists: answer the primary's metrics requests
 * (with nothing yet), so that a scrape while a worker starts does not wait for a timeout.
 */
export function prepareWorkerMetrics(): void {
  if (prepared) return;
  prepared = true;
  new AggregatorRegistry(); // installs prom-client's IPC listener in this worker
  AggregatorRegistry.setRegistries([]);
}
let prepared = false;

/** In the cluster primary: asks every worker for its registry and sums them by each metric's aggregator. */
export function clusterAggregator(): AggregatorRegistry<PrometheusContentType> {
  return new AggregatorRegistry();
}

/**
 * `Authorization: Bearer <token>`, compared in constant time: both sides are hashed first,
 * so neither the token's length nor its prefix leaks through timing.
 */
export function bearerMatches(header: string | string[] | undefined, token: string): boolean {
  const value = Array.isArray(header) ? header[0] : header;
  const given = /^Bearer +([\x21-\x7e]+) *$/i.exec(value ?? '')?.[1] ?? '';
  const equal = timingSafeEqual(createHash('sha256').update(given).digest(), createHash('sha256').update(token).digest());
  return equal && given !== '';
}

const UNAUTHORIZED = 'A valid metrics token is required (Authorization: Bearer <METRICS_TOKEN>).';

/**
 * GET /metrics on the API port. It checks its own token (API keys are for tenants; the
 * metrics token is the operator's), so the route is public to the API-key check and
 * hidden from the OpenAPI document.
 */
export function registerMetricsRoute(app: FastifyInstance, metrics: Metrics, token: string): void {
  app.get('/metrics', { config: { access: 'public' }, schema: { hide: true } }, async (request, reply) => {
    if (!bearerMatches(request.headers.authorization, token)) {
      reply.header('www-authenticate', 'Bearer realm="metrics"');
      throw ApiError.unauthorized(UNAUTHORIZED);
    }
    const { contentType, body } = await metrics.render();
    return reply.type(contentType).send(body);
  });
}

export type MetricsListener = { url: string; close(): Promise<void> };

/**
 * A listener of its own for /metrics (METRICS_PORT): so it can be bound to a port the load
 * balancer does not expose, and so a cluster primary can answer for all its workers.
 */
export async function listenMetrics(opts: {
  host: string;
  port: number;
  token: string;
  log: Logger;
  render: () => Promise<Rendered>;
}): Promise<MetricsListener> {
  const { token, log, render } = opts;
  const problem = (res: http.ServerResponse, status: number, title: string, detail: string, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/problem+json', ...headers });
    res.end(JSON.stringify({ type: 'about:blank', title, status, detail }));
  };
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      return problem(res, 404, 'Not Found', `No route ${req.method} ${path}.`);
    }
    if (!bearerMatches(req.headers.authorization, token)) {
      return problem(res, 401, 'Unauthorized', UNAUTHORIZED, { 'www-authenticate': 'Bearer realm="metrics"' });
    }
    render().then(
      ({ contentType, body }) => {
        res.writeHead(200, { 'content-type': contentType });
        res.end(req.method === 'HEAD' ? undefined : body);
      },
      (err: Error) => {
        log.error({ err: err.message }, 'metrics: collecting failed');
        problem(res, 503, 'Service Unavailable', 'The metrics could not be collected; try again.');
      },
    );
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    const failed = (err: Error) => reject(new Error(`cannot serve metrics on HOST ${opts.host}, METRICS_PORT ${opts.port}: ${err.message}`));
    server.once('error', failed);
    server.listen(opts.port, opts.host, () => {
      server.off('error', failed);
      // As the API's listener (main.ts): a failed accept is logged, never the end of the process.
      server.on('error', (err) => opts.log.error({ err: err.message }, 'metrics: a connection could not be accepted'));
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${opts.host.includes(':') ? `[${opts.host}]` : opts.host}:${port}/metrics`;
  log.info({ metrics_url: url }, 'metrics listening');
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
