/**
 * `npm run bench [-- scenario ...]`: starts Coffer on a fresh embedded PostgreSQL and a
 * bare Fastify baseline, each in its own child process, drives both with autocannon from
 * this process, and reports every scenario against its baseline measured in the same run.
 * Missing a target is reported, not an error (exit 0); a run with any non-2xx response
 * is an error (exit 1), because it measured something else. See docs/benchmarks.md.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BenchError, freePort, load, probe, startServer, table, waitReady, type Req, type Result, type Row, type Server } from './lib.ts';

/** What prepare/requests get: the running Coffer, its management key, and a way to set data up through the API. */
type Context = {
  key: string;
  /** A call to Coffer with the management key; throws on non-2xx, returns the parsed JSON body. */
  call(method: string, path: string, json?: unknown): Promise<any>;
};

type Target = {
  /** Which child serves the requests (default Coffer). */
  server?: 'coffer' | 'baseline';
  /** Runs once before the warm-up; what it returns is passed to `requests`. */
  prepare?: (ctx: Context) => Promise<Record<string, any>>;
  /** The request, or requests cycled through, that the run sends. */
  requests: (ctx: Context, prepared: Record<string, any>) => Req | Req[];
};

type Scenario = Target & {
  name: string;
  /** Key of `baselines`; measured in this run with the scenario's connection count. */
  baseline: string;
  /** The scenario passes when its req/s is at least this share of the baseline's. */
  target: number;
  connections: number;
};

const baselines: Record<string, Target> = {
  'fastify.bare': { server: 'baseline', requests: () => ({ path: '/bare' }) },
};

const scenarios: Scenario[] = [
  {
    // The authentication path: key → principal (cached), permission check, the caller's application.
    name: 'auth',
    baseline: 'fastify.bare',
    target: 0.5,
    connections: 50,
    requests: ({ key }) => ({ path: '/applications/key', headers: { 'svc-api-key': key } }),
  },
];

const WARMUP_SECONDS = 2;
const root = path.resolve(import.meta.dirname, '..');
const resultsPath = path.join(import.meta.dirname, 'results.json');

function durationSeconds(): number {
  const raw = process.env.BENCH_DURATION ?? '10';
  // Capped so ~10 scenarios plus their baselines stay well under 20 minutes.
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 60) throw new BenchError(`BENCH_DURATION must be whole seconds from 1 to 60 (got "${raw}")`);
  return Number(raw);
}

async function main(): Promise<number> {
  const duration = durationSeconds();
  const only = process.argv.slice(2);
  const unknown = only.filter((n) => !scenarios.some((s) => s.name === n));
  if (unknown.length) throw new BenchError(`unknown scenario(s) ${unknown.join(', ')}; known: ${scenarios.map((s) => s.name).join(', ')}`);
  const selected = only.length ? scenarios.filter((s) => only.includes(s.name)) : scenarios;
  for (const s of selected) if (!baselines[s.baseline]) throw new BenchError(`scenario ${s.name}: no baseline named ${s.baseline}`);

  // LOG_LEVEL=warn in both children: no per-request log line in either figure.
  const logLevel = process.env.LOG_LEVEL ?? 'warn';
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-bench-'));
  const servers: Server[] = [];
  cleanup = async () => {
    cleanup = async () => {};
    for (const s of servers) {
      // A killed Coffer leaves its embedded PostgreSQL running; stop it before deleting its files.
      if (!(await s.stop()) && s.name === 'coffer') stopOrphanPostgres(dataDir);
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  };

  try {
    // Anything else running on the 2 cores skews every figure; say so up front.
    process.stdout.write(`load average before start: ${os.loadavg()[0].toFixed(2)} (1 min) on ${os.availableParallelism()} cores\n`);
    process.stdout.write(`starting Coffer (fresh embedded PostgreSQL in ${dataDir}) and the baseline, LOG_LEVEL=${logLevel}\n`);
    // DATABASE_URL='' so a URL in the caller's environment cannot point the bench at a real database.
    const coffer = startServer('coffer', path.join(root, 'src/cli.ts'), ['serve'], { DATA_DIR: dataDir, DATABASE_URL: '', LOG_LEVEL: logLevel }, await freePort());
    servers.push(coffer);
    const baseline = startServer('baseline', path.join(import.meta.dirname, 'baseline-server.ts'), [], { LOG_LEVEL: logLevel }, await freePort());
    servers.push(baseline);

    // The first start prints the new tenant's management key to stderr, indented by two spaces.
    const key = (await coffer.waitFor(/^ {2}(key_\S+)$/m, 120_000))[1];
    await Promise.all([waitReady(coffer, '/health/ready', 60_000), waitReady(baseline, '/health/ready', 60_000)]);

    const ctx: Context = {
      key,
      async call(method, p, json) {
        const res = await fetch(coffer.url + p, {
          method,
          headers: { 'svc-api-key': key, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
          body: json === undefined ? undefined : JSON.stringify(json),
        });
        const text = await res.text();
        if (!res.ok) throw new BenchError(`set-up call ${method} ${p} answered ${res.status}: ${text.slice(0, 500)}`);
        return text ? JSON.parse(text) : undefined;
      },
    };

    const measure = async (label: string, t: Target, connections: number): Promise<Result> => {
      const server = t.server === 'baseline' ? baseline : coffer;
      const reqs = [t.requests(ctx, t.prepare ? await t.prepare(ctx) : {})].flat();
      await probe(label, server.url, reqs);
      process.stdout.write(`${label}: warm-up ${WARMUP_SECONDS} s, then ${duration} s at ${connections} connections\n`);
      await load(`${label} (warm-up)`, server.url, reqs, connections, WARMUP_SECONDS);
      return load(label, server.url, reqs, connections, duration);
    };

    // Each baseline is measured once per connection count, right before the first scenario that needs it.
    const baselineResults = new Map<string, Result>();
    const rows: Row[] = [];
    for (const s of selected) {
      const baseKey = `${s.baseline}@${s.connections}`;
      if (!baselineResults.has(baseKey)) baselineResults.set(baseKey, await measure(s.baseline, baselines[s.baseline], s.connections));
      const base = baselineResults.get(baseKey)!;
      const r = await measure(s.name, s, s.connections);
      const ratio = r.requests.average / base.requests.average;
      rows.push({
        scenario: s.name,
        rps: r.requests.average,
        p50_ms: r.latency.p50,
        p99_ms: r.latency.p99,
        baseline: s.baseline,
        baseline_rps: base.requests.average,
        baseline_p50_ms: base.latency.p50,
        baseline_p99_ms: base.latency.p99,
        ratio,
        target_ratio: s.target,
        pass: ratio >= s.target,
      });
    }

    process.stdout.write(`\n${table(rows)}\n\n`);
    const results = rows.map((r) => ({
      scenario: r.scenario,
      rps: Math.round(r.rps),
      p50_ms: r.p50_ms,
      p99_ms: r.p99_ms,
      baseline: r.baseline,
      baseline_rps: Math.round(r.baseline_rps),
      ratio: Number(r.ratio.toFixed(3)),
      target_ratio: r.target_ratio,
    }));
    fs.writeFileSync(resultsPath, `${JSON.stringify(results, null, 2)}\n`);
    const failed = rows.filter((r) => !r.pass);
    process.stdout.write(
      failed.length
        ? `${failed.length} of ${rows.length} scenario(s) MISSED their target: ${failed.map((r) => r.scenario).join(', ')}\n`
        : `all ${rows.length} scenario(s) met their target\n`,
    );
    process.stdout.write(`results written to ${path.relative(root, resultsPath)}\n`);
    return 0;
  } finally {
    await cleanup();
  }
}

/** Last resort after SIGKILLing Coffer: its PostgreSQL runs detached, so signal it by the pid in postmaster.pid. */
function stopOrphanPostgres(dataDir: string): void {
  try {
    const pid = Number(fs.readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
    if (pid > 0) process.kill(pid, 'SIGQUIT');
  } catch {
    // no pid file: PostgreSQL already stopped
  }
}

let cleanup = async () => {};
// Ctrl-C still stops the children and removes the temp dir.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    process.stderr.write(`\n${signal}: stopping servers\n`);
    void cleanup().finally(() => process.exit(128 + os.constants.signals[signal]));
  });
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`\nBENCH FAILED: ${err instanceof BenchError ? err.message : (err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  },
);
