import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { Database } from '../../src/db/database.ts';
import {
  backoffMs,
  claimJobs,
  completeJob,
  enqueue,
  enqueueMany,
  failJob,
  findJob,
  JobRunner,
  PermanentJobError,
  scheduledDelayMs,
  sweepJobs,
  type ClaimedJob,
  type Job,
} from '../../src/db/jobs.ts';
import { migrate } from '../../src/db/migrate.ts';
import { createLogger } from '../../src/logger.ts';
import { createTestDatabase } from '../helpers/server.ts';

const log = createLogger('silent');

/** Polls until `check` holds, failing after `ms`. */
async function until(check: () => Promise<boolean>, ms = 20_000, what = 'condition'): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

describe('jobs queue', () => {
  let database: { url: string; drop(): Promise<void> };
  let db: Database;
  let tenantId: string;
  // Each test uses kinds of its own, so runners never pick up another test's jobs.
  const kind = (name: string) => `test.${name}.${randomUUID().slice(0, 8)}`;

  before(async () => {
    database = await createTestDatabase();
    db = new Database(database.url, 10, log);
    await migrate(db.pool, log);
    tenantId = randomUUID();
    await db.query(`INSERT INTO tenants (id, name) VALUES ($1, 'jobs test')`, [tenantId]);
  });
  after(async () => {
    await db.close();
    await database.drop();
  });

  const job = async (id: string) => (await findJob(db, id))!;
  const statusCount = async (k: string, status: string) =>
    (await db.one<{ n: number }>(`SELECT count(*) AS n FROM jobs WHERE kind = $1 AND status = $2`, [k, status]))!.n;

  it('enqueues in the caller\'s transaction: rolled back, no job; committed, a pending job', async () => {
    const k = kind('outbox');
    await assert.rejects(db.transaction(async (tx) => {
      await enqueue(db, tenantId, k, { n: 1 }, {}, tx);
      throw new Error('the change failed');
    }));
    assert.equal(await statusCount(k, 'pending'), 0);

    const id = await db.transaction((tx) => enqueue(db, tenantId, k, { n: 2 }, { maxAttempts: 3 }, tx));
    const row = await job(id);
    assert.equal(row.status, 'pending');
    assert.equal(row.kind, k);
    assert.equal(row.tenant_id, tenantId);
    assert.deepEqual(row.payload, { n: 2 });
    assert.equal(row.attempts, 0);
    assert.equal(row.max_attempts, 3);
    assert.ok(row.run_at.getTime() <= Date.now() + 1000);
    assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7/, 'ids are UUIDv7');
  });

  it('claims only due jobs of its kinds, each once, under a lease', async () => {
    const k = kind('claim');
    const ids = await enqueueMany(db, tenantId, k, [{ i: 0 }, { i: 1 }, { i: 2 }]);
    const later = await enqueue(db, tenantId, k, { later: true }, { runAt: new Date(Date.now() + 60_000) });
    await enqueue(db, tenantId, kind('other'), {});

    const a = await claimJobs(db, 'worker-a', [k], 2, 30_000);
    const b = await claimJobs(db, 'worker-b', [k], 10, 30_000);
    assert.equal(a.length, 2);
    assert.equal(b.length, 1);
    assert.deepEqual([...a, ...b].map((j) => j.id).sort(), [...ids].sort());
    for (const j of a) {
      assert.equal(j.status, 'running');
      assert.equal(j.attempts, 1);
      assert.equal(j.locked_by, 'worker-a');
      assert.ok(j.locked_until!.getTime() > Date.now() + 20_000);
    }
    assert.deepEqual(await claimJobs(db, 'worker-c', [k], 10, 30_000), [], 'leased and future jobs are not due');
    assert.equal((await job(later)).status, 'pending');
  });

  it('retries a job whose worker died once its lease lapses, and fences the old worker out', async () => {
    const k = kind('lease');
    const id = await enqueue(db, tenantId, k, {});
    const [first] = await claimJobs(db, 'crashed', [k], 1, 30_000);
    assert.equal(first.id, id);
    assert.deepEqual(await claimJobs(db, 'survivor', [k], 1, 30_000), []);

    await db.query(`UPDATE jobs SET locked_until = now() - interval '1 second' WHERE id = $1`, [id]);
    const [second] = await claimJobs(db, 'survivor', [k], 1, 30_000);
    assert.equal(second.id, id);
    assert.equal(second.attempts, 2);
    assert.equal(second.locked_by, 'survivor');

    // The first worker comes back to life: its outcome no longer counts.
    assert.equal(await completeJob(db, first, 'crashed'), false);
    assert.equal(await failJob(db, first, 'crashed', 'late', 0), false);
    assert.equal((await job(id)).status, 'running');
    assert.equal(await completeJob(db, second, 'survivor'), true);
    const done = await job(id);
    assert.equal(done.status, 'done');
    assert.ok(done.finished_at);
    assert.equal(done.locked_until, null);
  });

  it('backs off exponentially with jitter, up to a cap', () => {
    assert.equal(backoffMs(1, 1000, 3_600_000, () => 1), 1000);
    assert.equal(backoffMs(1, 1000, 3_600_000, () => 0), 500);
    assert.equal(backoffMs(2, 1000, 3_600_000, () => 1), 2000);
    assert.equal(backoffMs(5, 1000, 3_600_000, () => 1), 16_000);
    assert.equal(backoffMs(13, 1000, 3_600_000, () => 1), 3_600_000, 'capped at an hour');
    assert.equal(backoffMs(100, 1000, 3_600_000, () => 0.5), 2_700_000);
    for (let attempt = 1; attempt < 30; attempt++) {
      const d = backoffMs(attempt, 1000, 3_600_000);
      assert.ok(d >= Math.min(3_600_000, 1000 * 2 ** (attempt - 1)) / 2 && d <= 3_600_000);
    }
  });

  it('a fixed schedule gives each attempt its wait, up to a tenth less, and repeats its last', () => {
    const schedule = [5000, 300_000, 36_000_000];
    assert.equal(scheduledDelayMs(1, schedule, () => 1), 5000);
    assert.equal(scheduledDelayMs(1, schedule, () => 0), 4500);
    assert.equal(scheduledDelayMs(2, schedule, () => 1), 300_000);
    assert.equal(scheduledDelayMs(3, schedule, () => 1), 36_000_000);
    assert.equal(scheduledDelayMs(7, schedule, () => 0.5), 34_200_000, 'the last wait repeats');
  });

  it('kinds with a retry schedule follow it; the others back off exponentially', async () => {
    const scheduled = kind('scheduled');
    const other = kind('exponential');
    const fail = async () => {
      throw new Error('down');
    };
    const runner = new JobRunner(db, { [scheduled]: fail, [other]: fail }, {
      log,
      pollMs: 10,
      backoffBaseMs: 100,
      backoffMaxMs: 100,
      retrySchedules: { [scheduled]: [60_000] },
    });
    runner.start();
    try {
      const a = await enqueue(db, tenantId, scheduled, {});
      const b = await enqueue(db, tenantId, other, {});
      await until(async () => (await job(a)).attempts === 1 && (await job(b)).attempts >= 2, 10_000, 'both failed');
      const waited = (await job(a)).run_at.getTime() - Date.now();
      assert.ok(waited > 50_000 && waited <= 60_000, `the scheduled kind waits its minute (${waited} ms left)`);
    } finally {
      await runner.stop();
    }
  });

  it('runs a job to done and passes its payload, tenant and attempt', async () => {
    const k = kind('ok');
    const seen: ClaimedJob[] = [];
    const runner = new JobRunner(db, { [k]: async (j) => void seen.push(j) }, { log, pollMs: 20 });
    runner.start();
    try {
      const id = await enqueue(db, tenantId, k, { hello: 'world' });
      await until(async () => (await job(id)).status === 'done', 10_000, 'job done');
      assert.equal(seen.length, 1);
      assert.deepEqual(seen[0], { id, tenantId, kind: k, payload: { hello: 'world' }, attempt: 1, maxAttempts: 8 });
      assert.equal((await job(id)).last_error, null);
    } finally {
      await runner.stop();
    }
  });

  it('retries a failing job with backoff, then dead-letters it with the reason', async () => {
    const k = kind('fail');
    const attempts: { attempt: number; at: number }[] = [];
    const runner = new JobRunner(db, {
      [k]: async (j) => {
        attempts.push({ attempt: j.attempt, at: Date.now() });
        throw new Error(`boom ${j.attempt}`);
      },
    }, { log, pollMs: 10, backoffBaseMs: 100, backoffMaxMs: 400 });
    runner.start();
    try {
      const id = await enqueue(db, tenantId, k, {}, { maxAttempts: 4 });
      await until(async () => (await job(id)).status === 'dead', 15_000, 'job dead');
      const dead = await job(id);
      assert.equal(dead.attempts, 4);
      assert.equal(dead.last_error, 'boom 4');
      assert.ok(dead.finished_at);
      assert.deepEqual(attempts.map((a) => a.attempt), [1, 2, 3, 4]);
      // Waits of at least half of 100, 200 and 400 ms (cap) between attempts.
      const gaps = attempts.slice(1).map((a, i) => a.at - attempts[i].at);
      [50, 100, 200].forEach((min, i) => assert.ok(gaps[i] >= min - 5, `gap ${i} was ${gaps[i]} ms, expected ≥ ${min}`));
      await sleep(300);
      assert.equal(attempts.length, 4, 'a dead job is not run again');
    } finally {
      await runner.stop();
    }
  });

  it('a job that fails and then succeeds ends done, its earlier error cleared', async () => {
    const k = kind('flaky');
    const runner = new JobRunner(db, {
      [k]: async (j) => {
        if (j.attempt < 3) throw new Error('not yet');
      },
    }, { log, pollMs: 10, backoffBaseMs: 10, backoffMaxMs: 20 });
    runner.start();
    try {
      const id = await enqueue(db, tenantId, k, {});
      await until(async () => (await job(id)).status === 'done', 10_000, 'job done');
      const done = await job(id);
      assert.equal(done.attempts, 3);
      assert.equal(done.last_error, null);
    } finally {
      await runner.stop();
    }
  });

  it('dead-letters at once on PermanentJobError', async () => {
    const k = kind('permanent');
    let runs = 0;
    const runner = new JobRunner(db, {
      [k]: async () => {
        runs++;
        throw new PermanentJobError('cannot ever work');
      },
    }, { log, pollMs: 10, backoffBaseMs: 10 });
    runner.start();
    try {
      const id = await enqueue(db, tenantId, k, {}, { maxAttempts: 5 });
      await until(async () => (await job(id)).status === 'dead', 10_000, 'job dead');
      assert.equal(runs, 1);
      assert.equal((await job(id)).last_error, 'cannot ever work');
    } finally {
      await runner.stop();
    }
  });

  it('dead-letters, without running it again, a job whose worker died on its final attempt', async () => {
    const k = kind('final-crash');
    let runs = 0;
    const id = await enqueue(db, tenantId, k, {}, { maxAttempts: 1 });
    await claimJobs(db, 'crashed', [k], 1, 30_000);
    await db.query(`UPDATE jobs SET locked_until = now() - interval '1 second' WHERE id = $1`, [id]);
    const runner = new JobRunner(db, { [k]: async () => void runs++ }, { log, pollMs: 10 });
    runner.start();
    try {
      await until(async () => (await job(id)).status === 'dead', 10_000, 'job dead');
      assert.equal(runs, 0);
      assert.match((await job(id)).last_error!, /worker .* stopped|final attempt/);
    } finally {
      await runner.stop();
    }
  });

  it('renews the lease of a long-running handler, so no other worker takes the job over', async () => {
    const k = kind('long');
    let runs = 0;
    const handlers = {
      [k]: async () => {
        runs++;
        await sleep(1200);
      },
    };
    const opts = { log, pollMs: 20, leaseMs: 300 };
    const a = new JobRunner(db, handlers, opts);
    const b = new JobRunner(db, handlers, opts);
    a.start();
    b.start();
    try {
      const id = await enqueue(db, tenantId, k, {});
      await until(async () => (await job(id)).status === 'done', 10_000, 'job done');
      assert.equal(runs, 1);
      assert.equal((await job(id)).attempts, 1);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });

  it('two runners, each with its own connection pool, run each of many jobs exactly once and never concurrently', async () => {
    const k = kind('race');
    const other = new Database(database.url, 10, log);
    const runs = new Map<string, number>();
    const running = new Set<string>();
    const byRunner = [0, 0];
    let overlaps = 0;
    const handler = (which: number) => async (j: ClaimedJob) => {
      if (running.has(j.id)) overlaps++;
      running.add(j.id);
      runs.set(j.id, (runs.get(j.id) ?? 0) + 1);
      byRunner[which]++;
      await sleep(Math.random() * 5);
      running.delete(j.id);
    };
    const opts = { log, pollMs: 5, concurrency: 8 };
    const a = new JobRunner(db, { [k]: handler(0) }, opts);
    const b = new JobRunner(other, { [k]: handler(1) }, opts);
    try {
      const total = 400;
      const ids: string[] = [];
      for (let i = 0; i < total; i += 100) {
        ids.push(...(await enqueueMany(db, tenantId, k, Array.from({ length: 100 }, (_, n) => ({ n: i + n })))));
      }
      a.start();
      b.start();
      await until(async () => (await statusCount(k, 'done')) === total, 60_000, 'all jobs done');
      await Promise.all([a.stop(), b.stop()]);
      assert.equal(overlaps, 0);
      assert.equal(runs.size, total);
      for (const id of ids) assert.equal(runs.get(id), 1, `job ${id} ran ${runs.get(id)} times`);
      assert.ok(byRunner[0] > 0 && byRunner[1] > 0, `both runners took part: ${byRunner}`);
      const rows = await db.query<Job>(`SELECT attempts FROM jobs WHERE kind = $1 AND attempts <> 1`, [k]);
      assert.equal(rows.length, 0);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
      await other.close();
    }
  });

  describe('in separate processes', () => {
    const workers: ChildProcess[] = [];

    /** A worker process (test/helpers/job-worker.ts) on this database, once it polls. */
    async function worker(k: string, env: Record<string, string> = {}): Promise<ChildProcess> {
      const child = spawn(process.execPath, [path.resolve(import.meta.dirname, '../helpers/job-worker.ts')], {
        env: { ...process.env, DATABASE_URL: database.url, JOB_KIND: k, ...env },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      workers.push(child);
      await new Promise<void>((resolve, reject) => {
        child.once('exit', (code) => reject(new Error(`worker exited with ${code}`)));
        child.stdout!.once('data', () => resolve());
      });
      return child;
    }

    async function stopWorker(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill(signal);
      await exited;
    }

    const runsOf = (k: string) =>
      db.query<{ job_id: string; pid: number; attempt: number; at: Date }>(
        `SELECT r.job_id, r.pid, r.attempt, r.at FROM job_runs r JOIN jobs j ON j.id = r.job_id WHERE j.kind = $1 ORDER BY r.at`,
        [k],
      );

    before(async () => {
      await db.query(`CREATE TABLE job_runs (job_id uuid NOT NULL, pid int NOT NULL, attempt int NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())`);
    });
    after(async () => {
      await Promise.all(workers.map((w) => stopWorker(w, 'SIGKILL')));
    });

    it('two processes run each of many jobs exactly once', async () => {
      const k = kind('processes');
      const total = 400;
      const ids: string[] = [];
      for (let i = 0; i < total; i += 100) ids.push(...(await enqueueMany(db, tenantId, k, Array.from({ length: 100 }, (_, n) => ({ n: i + n })))));
      const [a, b] = await Promise.all([worker(k), worker(k)]);
      await until(async () => (await statusCount(k, 'done')) === total, 60_000, 'all jobs done');
      await Promise.all([stopWorker(a), stopWorker(b)]);

      const runs = await runsOf(k);
      const perJob = new Map<string, number>();
      for (const r of runs) perJob.set(r.job_id, (perJob.get(r.job_id) ?? 0) + 1);
      const twice = [...perJob].filter(([, n]) => n > 1);
      assert.deepEqual(twice, [], 'no job ran twice');
      assert.deepEqual([...perJob.keys()].sort(), [...ids].sort(), 'every job ran');
      const pids = new Set(runs.map((r) => r.pid));
      assert.deepEqual([...pids].sort(), [a.pid, b.pid].sort(), 'both processes took part');
    });

    it('a job whose process was killed mid-run is taken over by another process once its lease lapses', async () => {
      const k = kind('killed');
      const leaseMs = 1000;
      const doomed = await worker(k, { JOB_MODE: 'hang', JOB_LEASE_MS: String(leaseMs) });
      const id = await enqueue(db, tenantId, k, {}, { maxAttempts: 3 });
      await until(async () => (await runsOf(k)).length === 1, 10_000, 'the first run');
      await stopWorker(doomed, 'SIGKILL');
      const killedAt = Date.now();
      assert.equal((await job(id)).status, 'running', 'still claimed by the dead process');

      const survivor = await worker(k, { JOB_LEASE_MS: String(leaseMs) });
      await until(async () => (await job(id)).status === 'done', 10_000, 'job done by the survivor');
      const takenOverAfter = Date.now() - killedAt;
      await stopWorker(survivor);

      const runs = await runsOf(k);
      assert.deepEqual(runs.map((r) => [r.pid, r.attempt]), [[doomed.pid, 1], [survivor.pid, 2]]);
      const done = await job(id);
      assert.equal(done.attempts, 2);
      assert.equal(done.locked_by?.startsWith(`${survivor.pid}-`), true, 'finished by the survivor');
      // Not before the dead process's lease lapsed (it was renewed until the kill).
      assert.ok(runs[1].at.getTime() - runs[0].at.getTime() >= leaseMs - 50, `taken over ${runs[1].at.getTime() - runs[0].at.getTime()} ms after the first run`);
      assert.ok(takenOverAfter < 5000, `taken over ${takenOverAfter} ms after the kill`);
    });
  });

  it('stop() waits for running handlers to finish', async () => {
    const k = kind('stop');
    let finished = false;
    const runner = new JobRunner(db, {
      [k]: async () => {
        await sleep(300);
        finished = true;
      },
    }, { log, pollMs: 10 });
    runner.start();
    const id = await enqueue(db, tenantId, k, {});
    await until(async () => (await job(id)).status === 'running', 10_000, 'job running');
    await runner.stop();
    assert.equal(finished, true);
    assert.equal((await job(id)).status, 'done');
  });

  it('the sweep deletes finished jobs past their retention and keeps the rest', async () => {
    const k = kind('sweep');
    const [oldDone, newDone, oldDead, midDead, pending] = await enqueueMany(db, tenantId, k, [{}, {}, {}, {}, {}]);
    const finish = (id: string, status: string, daysAgo: number) =>
      db.query(`UPDATE jobs SET status = $2, finished_at = now() - make_interval(days => $3) WHERE id = $1`, [id, status, daysAgo]);
    await finish(oldDone, 'done', 8);
    await finish(newDone, 'done', 6);
    await finish(oldDead, 'dead', 31);
    await finish(midDead, 'dead', 8);
    await db.query(`UPDATE jobs SET created_at = now() - interval '100 days' WHERE id = $1`, [pending]);
    const deleted = await sweepJobs(db, { doneDays: 7, deadDays: 30 });
    assert.ok(deleted >= 2);
    assert.equal(await findJob(db, oldDone), undefined);
    assert.equal(await findJob(db, oldDead), undefined);
    for (const id of [newDone, midDead, pending]) assert.ok(await findJob(db, id), 'kept');
  });
});
