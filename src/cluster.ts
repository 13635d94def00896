import cluster, { type Worker } from 'node:cluster';
import type { Counter } from 'prom-client';
import { ConfigError, type Config, type LogFormat } from './config.ts';
import { openDatabase, type OpenDatabase } from './db/open.ts';
import type { MetricsListener } from './http/metrics.ts';
import type { Logger } from './logger.ts';
import type { Running } from './main.ts';
import { loadKeyring } from './vault/keyring.ts';

/**
 * `coffer serve --workers N`: one primary process and N workers (node:cluster), each
 * worker a whole Coffer server on the shared port. See docs/operations.md.
 *
 * The primary serves no API. It prepares what must happen once — the key file, the
 * embedded PostgreSQL (which it owns and stops last), the migrations — then forks the
 * workers with DATABASE_URL in their environment, so none of them starts a database of
 * its own. Everything else is per worker, exactly as with separate processes on one
 * database: caches are cleared by LISTEN/NOTIFY, jobs are claimed with SKIP LOCKED, the
 * first-start tenant is created under an advisory lock by whichever worker gets there
 * first (and that worker prints its key).
 */

export const MAX_WORKERS = 64;
const READY = 'coffer:worker-ready';
/** A worker that ran at least this long before dying is restarted at once; quicker deaths back off. */
const STABLE_MS = 30_000;
const BACKOFF_BASE_MS = 500;
const BACKOFF_MAX_MS = 30_000;
/**
 * How long workers get to stop before SIGKILL, beyond their own limits: SHUTDOWN_GRACE_SECONDS
 * for requests in flight, 15 s for running jobs (src/db/jobs.ts), in parallel.
 */
const JOBS_STOP_MS = 15_000;
const STOP_MARGIN_MS = 10_000;

type ReadyMessage = { type: typeof READY; url: string; firstStart: boolean };

/** `--workers`: absent means 1 (one process, no cluster). */
export function parseWorkerCount(raw: string | undefined): number {
  if (raw === undefined) return 1;
  const value = raw.trim();
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || n > MAX_WORKERS) {
    throw new ConfigError([`--workers must be a whole number from 1 to ${MAX_WORKERS} (got "${raw}")`]);
  }
  return n;
}

/** The management key goes to the terminal (stderr) once, never into the log stream. */
export function announceFirstKey(firstKey: NonNullable<Running['firstKey']>): void {
  process.stderr.write(
    `\nCoffer created tenant ${firstKey.tenant_id} on this first start.\n` +
      `Its management API key (shown only now; send it as SVC-API-KEY):\n\n  ${firstKey.api_key}\n\n` +
      `The owner's sign-in link (works once, for SIGNIN_LINK_MINUTES; \`coffer signin-link\` makes another):\n\n  ${firstKey.signin_url}\n\n`,
  );
}

/**
 * Resolves on the first SIGINT or SIGTERM, with its name. A second signal of the same kind
 * then has its default effect (a second Ctrl-C ends a single process at once), unless
 * `absorb`: a worker gets Ctrl-C from the terminal and SIGTERM from its primary, and the
 * primary bounds the shutdown itself.
 */
export function untilSignal(opts: { absorb?: boolean } = {}): Promise<string> {
  return new Promise((resolve) => {
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      process.once(signal, () => {
        if (opts.absorb) for (const s of ['SIGINT', 'SIGTERM']) process.on(s, () => {});
        resolve(signal);
      });
    }
  });
}

/** A worker: the whole server, reporting to the primary when it serves. */
export async function runWorker(config: Config, baseLog: Logger): Promise<number> {
  const log = baseLog.child({ worker: Number(process.env.COFFER_WORKER_SLOT) || cluster.worker?.id });
  // Answer the primary's metrics requests from the start, so a scrape during a restart is not left hanging.
  if (config.metricsToken) (await import('./http/metrics.ts')).prepareWorkerMetrics();
  // Loaded by workers only: the primary serves no API, so it stays a small process.
  const { start } = await import('./main.ts');
  const running = await start(config, log, { clusterWorker: true, announceFirstKey });
  const signal = untilSignal({ absorb: true });
  log.info({ url: running.url }, 'worker ready');
  process.send?.({ type: READY, url: running.url, firstStart: running.firstKey !== undefined } satisfies ReadyMessage);
  log.info({ signal: await signal }, 'worker shutting down');
  try {
    await running.stop();
  } catch (err) {
    log.error({ err: (err as Error).message }, 'worker shutdown failed');
    return 1;
  }
  return 0;
}

type Slot = { index: number; worker: Worker | undefined; startedAt: number; failures: number; restarts: number; timer: NodeJS.Timeout | undefined };

/**
 * The primary: prepares the shared state once, forks and supervises the workers, stops everything in order.
 * `logFormat` is the primary's own, decided on its stdout (which the workers share): they get it as LOG_FORMAT.
 */
export async function runPrimary(config: Config, log: Logger, count: number, logFormat: LogFormat): Promise<number> {
  if (config.metricsToken && config.metricsPort === undefined) {
    throw new ConfigError([
      `METRICS_PORT is required with --workers ${count}: the primary serves the metrics of all workers there (each worker alone knows only its own)`,
    ]);
  }
  // The generated key file (without COFFER_KEYS) is created here, once, before any worker reads it.
  loadKeyring(config.cofferKeys, config.dataDir, log);
  const database = await openDatabase(config, log, { takeOwnership: true, migrate: true });
  let metricsListener: MetricsListener | undefined;
  try {
    await warnIfTooManyConnections(database, config, count, log);
    const stopTimeoutMs = Math.max(config.shutdownGraceSeconds * 1000, JOBS_STOP_MS) + STOP_MARGIN_MS;
    const supervisor = new Supervisor(log, count, { DATABASE_URL: database.url, LOG_FORMAT: logFormat }, stopTimeoutMs);
    if (config.metricsToken) {
      // Loaded only here: without metrics the primary never needs prom-client (~10 MB of RSS).
      const { listenMetrics } = await import('./http/metrics.ts');
      const render = await supervisor.metricsRenderer();
      metricsListener = await listenMetrics({ host: config.host, port: config.metricsPort!, token: config.metricsToken, log, render });
    }
    const signal = untilSignal({ absorb: true });
    const ready = await Promise.race([supervisor.start(), signal.then(() => undefined)]);
    if (ready === undefined || !ready.ok) {
      await supervisor.stop();
      return ready === undefined ? 0 : 1;
    }
    log.info({ workers: count, url: ready.url, first_start: ready.firstStart }, 'coffer ready');
    log.info({ signal: await signal }, 'shutting down: stopping the workers');
    await supervisor.stop();
    return 0;
  } finally {
    await metricsListener?.close();
    // Last: the workers are gone, so nobody uses the (embedded) database any more.
    await database.close();
  }
}

/** Each worker holds DATABASE_POOL_SIZE connections and one listener; together they must fit the server's limit. */
async function warnIfTooManyConnections(database: OpenDatabase, config: Config, count: number, log: Logger): Promise<void> {
  try {
    const row = await database.db.one<{ max_connections: string }>('SHOW max_connections');
    const max = Number(row?.max_connections);
    const needed = count * (config.databasePoolSize + 1);
    if (max && needed > max - 5) {
      log.warn({ workers: count, pool_size: config.databasePoolSize, max_connections: max },
        'the workers may open more database connections than the server allows; lower DATABASE_POOL_SIZE');
    }
  } catch {
    // Only advice; the workers will report a real problem.
  }
}

class Supervisor {
  private readonly log: Logger;
  private readonly slots: Slot[];
  private readonly env: Record<string, string>;
  private stopping = false;
  private initial: ((r: { ok: true; url: string; firstStart: boolean } | { ok: false }) => void) | undefined;
  private readyCount = 0;
  private url = '';
  private firstStart = false;
  private readonly exited = new Set<() => void>();
  /** Set when the primary serves metrics (metricsRenderer). */
  private restartsTotal: Counter | undefined;

  private readonly stopTimeoutMs: number;

  constructor(log: Logger, count: number, env: Record<string, string>, stopTimeoutMs: number) {
    this.log = log;
    this.env = env;
    this.stopTimeoutMs = stopTimeoutMs;
    this.slots = Array.from({ length: count }, (_, i) => ({ index: i + 1, worker: undefined, startedAt: 0, failures: 0, restarts: 0, timer: undefined }));
  }

  /** Forks every worker; resolves when all serve, or with ok: false as soon as one dies first. */
  start(): Promise<{ ok: true; url: string; firstStart: boolean } | { ok: false }> {
    return new Promise((resolve) => {
      this.initial = resolve;
      for (const slot of this.slots) this.fork(slot);
    });
  }

  private fork(slot: Slot): void {
    slot.timer = undefined;
    if (this.stopping) return;
    const worker = cluster.fork({ ...this.env, COFFER_WORKER_SLOT: String(slot.index) });
    slot.worker = worker;
    slot.startedAt = Date.now();
    let ready = false;
    worker.on('message', (msg: ReadyMessage) => {
      if (msg?.type !== READY || ready) return;
      ready = true;
      if (msg.firstStart) this.firstStart = true;
      this.url = msg.url;
      if (this.initial) {
        if (++this.readyCount === this.slots.length) {
          this.initial({ ok: true, url: this.url, firstStart: this.firstStart });
          this.initial = undefined;
        }
      } else {
        this.log.info({ worker: slot.index, worker_pid: worker.process.pid }, 'worker restarted');
      }
    });
    worker.on('exit', (code, signal) => {
      if (slot.worker === worker) slot.worker = undefined;
      for (const notify of this.exited) notify();
      if (this.stopping) return;
      if (this.initial) {
        // A worker that cannot start (port taken, database unreachable) would fail again: give up at once.
        this.log.error({ worker: slot.index, worker_pid: worker.process.pid, code, signal }, 'a worker failed to start; stopping');
        this.initial({ ok: false });
        this.initial = undefined;
        return;
      }
      const lived = Date.now() - slot.startedAt;
      slot.failures = lived >= STABLE_MS ? 0 : slot.failures + 1;
      const delay = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** Math.min(slot.failures, 16));
      slot.restarts++;
      this.restartsTotal?.inc();
      this.log.error(
        { worker: slot.index, worker_pid: worker.process.pid, code, signal, ran_ms: lived, restart_in_ms: delay, restarts: slot.restarts },
        'worker died; restarting it',
      );
      slot.timer = setTimeout(() => this.fork(slot), delay);
    });
  }

  /** SIGTERM to every worker; each stops gracefully. Those still running after the timeout are killed. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const slot of this.slots) clearTimeout(slot.timer);
    const live = () => this.slots.map((s) => s.worker).filter((w): w is Worker => w !== undefined && !w.isDead());
    for (const worker of live()) worker.process.kill('SIGTERM');
    const deadline = Date.now() + this.stopTimeoutMs;
    while (live().length > 0 && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, Math.max(0, deadline - Date.now()));
        const self = this;
        function done() {
          clearTimeout(timer);
          self.exited.delete(done);
          resolve();
        }
        this.exited.add(done);
      });
    }
    for (const worker of live()) {
      this.log.error({ worker_pid: worker.process.pid }, 'worker did not stop in time; killing it');
      worker.process.kill('SIGKILL');
    }
    while (live().length > 0) await new Promise((r) => setTimeout(r, 50));
  }

  /**
   * The sum over all workers (prom-client's cluster aggregation), plus the primary's own figures:
   * workers running and restarts (counted from here on; it is set up before the first fork).
   */
  async metricsRenderer(): Promise<() => Promise<{ contentType: string; body: string }>> {
    const [{ Counter, Gauge, Registry }, { clusterAggregator }] = await Promise.all([import('prom-client'), import('./http/metrics.ts')]);
    const registry = new Registry();
    const slots = this.slots;
    new Gauge({
      name: 'coffer_cluster_workers',
      help: 'Worker processes running (serve --workers N).',
      registers: [registry],
      collect() {
        this.set(slots.filter((s) => s.worker && !s.worker.isDead()).length);
      },
    });
    this.restartsTotal = new Counter({ name: 'coffer_cluster_worker_restarts_total', help: 'Workers that died and were restarted.', registers: [registry] });
    const aggregator = clusterAggregator();
    return async () => {
      const [workers, own] = await Promise.all([aggregator.clusterMetrics(), registry.metrics()]);
      const body = [workers, own].map((s) => s.trim()).filter(Boolean).join('\n') + '\n';
      return { contentType: aggregator.contentType, body };
    };
  }
}
