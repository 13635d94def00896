/**
 * Database baselines for bench/run.ts: operations run straight through `pg` from the bench
 * process against the embedded PostgreSQL Coffer itself uses, so a vault scenario is
 * compared with what the same database does for the same work without Coffer in between.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { BenchError, type Result } from './lib.ts';

/** The embedded PostgreSQL under DATA_DIR: port from its postmaster.pid (line 4), password from postgres.json. */
export function embeddedConnection(dataDir: string): pg.PoolConfig {
  const port = Number(fs.readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[3]);
  const { password } = JSON.parse(fs.readFileSync(path.join(dataDir, 'postgres.json'), 'utf8')) as { password: string };
  if (!port) throw new BenchError(`no port on line 4 of ${path.join(dataDir, 'postgres', 'postmaster.pid')}`);
  return { host: '127.0.0.1', port, user: 'postgres', password, database: 'postgres' };
}

// The bench's own table, shaped like a token row reduced to what a raw insert needs.
export const BENCH_TABLE = 'bench_raw';
const TENANT = randomUUID();
/** About the size of an encrypted card token's ciphertext. */
const PAYLOAD_BYTES = 200;

export async function createBenchTable(pool: pg.Pool): Promise<void> {
  await pool.query(`CREATE TABLE IF NOT EXISTS ${BENCH_TABLE} (
    id uuid PRIMARY KEY, tenant_id uuid NOT NULL, payload bytea NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`);
}

export async function dropBenchTable(pool: pg.Pool): Promise<void> {
  await pool.query(`DROP TABLE IF EXISTS ${BENCH_TABLE}`);
}

// Named statements: prepared once per connection, as Coffer's Database does with its SQL.
const INSERT = { name: 'bench_raw_insert', text: `INSERT INTO ${BENCH_TABLE} (id, tenant_id, payload) VALUES ($1, $2, $3)` };
const SELECT = { name: 'bench_raw_select', text: `SELECT id, tenant_id, payload, created_at FROM ${BENCH_TABLE} WHERE id = $1` };

export async function insertRow(pool: pg.Pool): Promise<void> {
  await pool.query({ ...INSERT, values: [randomUUID(), TENANT, randomBytes(PAYLOAD_BYTES)] });
}

/** Inserts `count` rows in batches and returns their ids. */
export async function preloadRows(pool: pg.Pool, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let done = 0; done < count; ) {
    const n = Math.min(1000, count - done);
    const batch = Array.from({ length: n }, () => randomUUID());
    const payloads = Array.from({ length: n }, () => randomBytes(PAYLOAD_BYTES));
    await pool.query(
      `INSERT INTO ${BENCH_TABLE} (id, tenant_id, payload) SELECT id, $2, payload FROM unnest($1::uuid[], $3::bytea[]) AS r(id, payload)`,
      [batch, TENANT, payloads],
    );
    ids.push(...batch);
    done += n;
  }
  await pool.query(`ANALYZE ${BENCH_TABLE}`);
  return ids;
}

/** A primary-key lookup of a random one of `ids`; a miss means the baseline measured something else. */
export async function selectRandomRow(pool: pg.Pool, ids: string[]): Promise<void> {
  const id = ids[Math.floor(Math.random() * ids.length)];
  const res = await pool.query({ ...SELECT, values: [id] });
  if (res.rowCount !== 1) throw new BenchError(`${BENCH_TABLE}: no row for id ${id}`);
}

/**
 * `workers` concurrent loops of `op` for `seconds`, each operation timed with
 * process.hrtime. Reported in autocannon's Result shape: requests.average is operations
 * per second over the whole run, latency in ms (0.01 ms resolution, where autocannon's
 * is 1 ms). Any failed operation fails the run, as a non-2xx does for autocannon.
 */
export async function opsLoad(label: string, op: () => Promise<unknown>, workers: number, seconds: number): Promise<Result> {
  const latencies: number[] = [];
  const perSecond: number[] = [];
  const start = process.hrtime.bigint();
  const deadline = start + BigInt(seconds) * 1_000_000_000n;
  let failure: unknown;
  const worker = async () => {
    while (failure === undefined) {
      const t0 = process.hrtime.bigint();
      if (t0 >= deadline) return;
      try {
        await op();
      } catch (err) {
        failure ??= err;
        return;
      }
      const t1 = process.hrtime.bigint();
      latencies.push(Number(t1 - t0) / 1e6);
      const second = Number((t1 - start) / 1_000_000_000n);
      perSecond[second] = (perSecond[second] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: workers }, worker));
  const elapsedSeconds = Number(process.hrtime.bigint() - start) / 1e9;
  if (failure !== undefined) throw new BenchError(`${label}: ${(failure as Error).message ?? String(failure)} (after ${latencies.length} operations)`);
  if (latencies.length === 0) throw new BenchError(`${label}: no operations completed`);

  latencies.sort((a, b) => a - b);
  const at = (p: number) => round(latencies[Math.min(latencies.length - 1, Math.ceil((p / 100) * latencies.length) - 1)]);
  // Only whole seconds inside the run (the last, partial one has just the stragglers).
  const samples = perSecond.slice(0, seconds).map((n) => n ?? 0).sort((a, b) => a - b);
  const sampleAt = (p: number) => samples[Math.min(samples.length - 1, Math.max(0, Math.ceil((p / 100) * samples.length) - 1))] ?? 0;
  const total = latencies.length;
  return {
    requests: { average: total / elapsedSeconds, mean: total / elapsedSeconds, total, p50: sampleAt(50), p99: sampleAt(99) },
    latency: {
      average: round(latencies.reduce((a, b) => a + b, 0) / total),
      mean: round(latencies.reduce((a, b) => a + b, 0) / total),
      min: round(latencies[0]),
      max: round(latencies[total - 1]),
      p50: at(50),
      p99: at(99),
    },
    errors: 0,
    timeouts: 0,
    non2xx: 0,
    '2xx': total,
    statusCodeStats: {},
  };
}

const round = (ms: number) => Math.round(ms * 100) / 100;
