/**
 * A job worker in a process of its own, for test/db/jobs.test.ts: a JobRunner with its own
 * connection pool on DATABASE_URL, running jobs of JOB_KIND. Each run is recorded in the
 * table job_runs (job id, this process's pid) before the handler does anything else, so the
 * test sees every run of every process. JOB_MODE=hang never finishes a job: that process is
 * killed mid-run. Prints "ready" once it polls; SIGTERM stops it cleanly.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Database } from '../../src/db/database.ts';
import { JobRunner } from '../../src/db/jobs.ts';
import { createLogger } from '../../src/logger.ts';

const log = createLogger('silent');
const db = new Database(process.env.DATABASE_URL!, 4, log);
const kind = process.env.JOB_KIND!;
const hang = process.env.JOB_MODE === 'hang';

const runner = new JobRunner(db, {
  [kind]: async (job) => {
    await db.query(`INSERT INTO job_runs (job_id, pid, attempt) VALUES ($1, $2, $3)`, [job.id, process.pid, job.attempt]);
    if (hang) await new Promise(() => {});
    await sleep(Math.random() * 5);
  },
}, { log, pollMs: 5, concurrency: 8, leaseMs: Number(process.env.JOB_LEASE_MS ?? 60_000) });

runner.start();
process.stdout.write('ready\n');
process.on('SIGTERM', () => {
  void runner.stop().then(() => db.close()).then(() => process.exit(0));
});
