import { randomUUID } from 'node:crypto';
import type { Logger } from '../logger.ts';
import type { Database, Tx } from './database.ts';
import { uuidv7 } from './ids.ts';

/**
 * The background jobs queue, kept in PostgreSQL (see docs/decisions.md):
 *
 * - `enqueue` inserts in the caller's transaction, so a job exists exactly when the change
 *   that causes it commits (a transactional outbox).
 * - A `JobRunner` claims due jobs with `FOR UPDATE SKIP LOCKED` and a lease: concurrent
 *   workers in any number of processes never claim the same job, and a job whose worker
 *   died is claimed again once its lease lapses. A running handler's lease is renewed, and
 *   every status change after the claim is fenced by (locked_by, attempts), so a worker
 *   that lost its lease cannot overwrite the outcome of the one that took it over.
 * - No transaction is open while a handler runs: the claim and each outcome are single
 *   autocommitted statements, since handlers do network I/O.
 * - Failures retry with capped exponential backoff and jitter, or on a fixed schedule for the
 *   kinds given one (webhook deliveries: WEBHOOK_RETRY_SCHEDULE); after `max_attempts` the job
 *   is dead-lettered (`status = 'dead'`, `last_error` says why) and stays visible.
 */

export type JobStatus = 'pending' | 'running' | 'done' | 'dead';

export type Job = {
  id: string;
  tenant_id: string | null;
  kind: string;
  payload: unknown;
  status: JobStatus;
  attempts: number;
  max_attempts: number;
  run_at: Date;
  locked_until: Date | null;
  locked_by: string | null;
  last_error: string | null;
  created_at: Date;
  finished_at: Date | null;
};

/** What a handler is given: the job as claimed, `attempt` counting from 1. */
export type ClaimedJob<P = any> = {
  id: string;
  tenantId: string | null;
  kind: string;
  payload: P;
  attempt: number;
  maxAttempts: number;
};

export type JobHandler = (job: ClaimedJob) => Promise<void>;
export type JobHandlers = Record<string, JobHandler>;

export type EnqueueOptions = { runAt?: Date; maxAttempts?: number };

export const DEFAULT_MAX_ATTEMPTS = 8;

/** Thrown by a handler when retrying cannot help: the job is dead-lettered at once. */
export class PermanentJobError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PermanentJobError';
  }
}

const COLUMNS = 'id, tenant_id, kind, payload, status, attempts, max_attempts, run_at, locked_until, locked_by, last_error, created_at, finished_at';

/** Inserts one job; pass the transaction of the change that causes it. Returns the job id. */
export async function enqueue(
  db: Database,
  tenantId: string | null,
  kind: string,
  payload: unknown,
  opts: EnqueueOptions = {},
  tx?: Tx,
): Promise<string> {
  return (await enqueueMany(db, tenantId, kind, [payload], opts, tx))[0];
}

/** Inserts one job per payload in a single statement. */
export async function enqueueMany(
  db: Database,
  tenantId: string | null,
  kind: string,
  payloads: unknown[],
  opts: EnqueueOptions = {},
  tx?: Tx,
): Promise<string[]> {
  if (payloads.length === 0) return [];
  const ids = payloads.map(() => uuidv7());
  await db.query(
    `INSERT INTO jobs (id, tenant_id, kind, payload, max_attempts, run_at)
     SELECT id, $2, $3, payload, $5, coalesce($6::timestamptz, now())
     FROM unnest($1::uuid[], $4::jsonb[]) AS j (id, payload)`,
    [ids, tenantId, kind, payloads.map((p) => JSON.stringify(p)), opts.maxAttempts ?? DEFAULT_MAX_ATTEMPTS, opts.runAt ?? null],
    tx,
  );
  return ids;
}

export async function findJob(db: Database, id: string): Promise<Job | undefined> {
  return db.one<Job>(`SELECT ${COLUMNS} FROM jobs WHERE id = $1`, [id]);
}

/**
 * Claims up to `limit` due jobs of the given kinds: pending ones whose time has come, and
 * running ones whose lease lapsed (their worker died). SKIP LOCKED passes over rows another
 * worker is claiming; one it claimed and committed meanwhile is re-checked against the WHERE
 * when locked and dropped. The subquery sits inside ARRAY(…) so it runs exactly once (an
 * InitPlan): as a plain `id IN (…)` PostgreSQL may plan a semi-join that re-runs it per row,
 * and the LIMIT then no longer bounds the claim.
 */
export async function claimJobs(db: Database, workerId: string, kinds: string[], limit: number, leaseMs: number): Promise<Job[]> {
  return db.query<Job>(
    `UPDATE jobs SET status = 'running', attempts = attempts + 1, locked_by = $2,
       locked_until = now() + make_interval(secs => $4::double precision / 1000)
     WHERE id = ANY(ARRAY(
       SELECT id FROM jobs
       WHERE kind = ANY($1::text[]) AND ((status = 'pending' AND run_at <= now()) OR (status = 'running' AND locked_until <= now()))
       ORDER BY run_at LIMIT $3 FOR UPDATE SKIP LOCKED))
     RETURNING ${COLUMNS}`,
    [kinds, workerId, limit, leaseMs],
  );
}

const OWNED = `id = $1 AND status = 'running' AND locked_by = $2 AND attempts = $3`;

/** Extends a running job's lease; false when the lease was lost to another worker. */
export async function renewLease(db: Database, job: Pick<Job, 'id' | 'attempts'>, workerId: string, leaseMs: number): Promise<boolean> {
  const rows = await db.query(
    `UPDATE jobs SET locked_until = now() + make_interval(secs => $4::double precision / 1000) WHERE ${OWNED} RETURNING id`,
    [job.id, workerId, job.attempts, leaseMs],
  );
  return rows.length > 0;
}

export async function completeJob(db: Database, job: Pick<Job, 'id' | 'attempts'>, workerId: string): Promise<boolean> {
  const rows = await db.query(
    `UPDATE jobs SET status = 'done', finished_at = now(), locked_until = NULL, last_error = NULL WHERE ${OWNED} RETURNING id`,
    [job.id, workerId, job.attempts],
  );
  return rows.length > 0;
}

/** Schedules a retry after `delayMs`, or dead-letters the job when `delayMs` is null. */
export async function failJob(db: Database, job: Pick<Job, 'id' | 'attempts'>, workerId: string, error: string, delayMs: number | null): Promise<boolean> {
  const rows = await db.query(
    delayMs === null
      ? `UPDATE jobs SET status = 'dead', finished_at = now(), locked_until = NULL, last_error = $4 WHERE ${OWNED} RETURNING id`
      : `UPDATE jobs SET status = 'pending', locked_until = NULL, locked_by = NULL, last_error = $4,
           run_at = now() + make_interval(secs => $5::double precision / 1000) WHERE ${OWNED} RETURNING id`,
    delayMs === null ? [job.id, workerId, job.attempts, error] : [job.id, workerId, job.attempts, error, delayMs],
  );
  return rows.length > 0;
}

/**
 * Deletes finished jobs past their retention, in batches so a large backlog never becomes
 * one long transaction. Conditional, so any number of processes may sweep at once.
 */
export async function sweepJobs(db: Database, retention: { doneDays: number; deadDays: number }): Promise<number> {
  let deleted = 0;
  for (const [status, days] of [['done', retention.doneDays], ['dead', retention.deadDays]] as const) {
    for (;;) {
      const rows = await db.query(
        `DELETE FROM jobs WHERE id IN (
           SELECT id FROM jobs WHERE status = $1 AND finished_at < now() - make_interval(days => $2) LIMIT 5000)
         AND status = $1 RETURNING id`,
        [status, days],
      );
      deleted += rows.length;
      if (rows.length < 5000) break;
    }
  }
  return deleted;
}

export type QueueStats = {
  kind: string;
  status: 'pending' | 'running' | 'dead';
  /** Jobs of this kind in this status. */
  jobs: number;
  /** Of those, the ones a worker could claim now: pending and due, or running with a lapsed lease. */
  due: number;
  /** How long the oldest of the due ones has waited (since run_at, or since its lease lapsed); 0 when none. */
  oldestDueSeconds: number;
};

/**
 * The queue at a glance, for metrics scrapes: one statement over unfinished and dead jobs
 * (done jobs are history, not queue, and would make the scan grow with retention).
 */
export async function queueStats(db: Database): Promise<QueueStats[]> {
  const rows = await db.query<{ kind: string; status: QueueStats['status']; jobs: number; due: number; oldest_due_seconds: number }>(
    `SELECT kind, status, count(*) AS jobs, count(due_since) AS due,
       coalesce(extract(epoch FROM now() - min(due_since)), 0)::float8 AS oldest_due_seconds
     FROM (SELECT kind, status, CASE
             WHEN status = 'pending' AND run_at <= now() THEN run_at
             WHEN status = 'running' AND locked_until <= now() THEN locked_until END AS due_since
           FROM jobs WHERE status IN ('pending', 'running', 'dead')) j
     GROUP BY kind, status`,
  );
  return rows.map((r) => ({ kind: r.kind, status: r.status, jobs: r.jobs, due: r.due, oldestDueSeconds: Math.max(0, r.oldest_due_seconds) }));
}

/** Capped exponential backoff with equal jitter: between half and all of min(cap, base·2^(attempt−1)). */
export function backoffMs(attempt: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(attempt - 1, 40));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/**
 * The wait before the attempt after `attempt` from a fixed schedule (its last entry repeats),
 * up to a tenth less, so that jobs that failed together do not all come back at once.
 */
export function scheduledDelayMs(attempt: number, schedule: readonly number[], random: () => number = Math.random): number {
  const wait = schedule[Math.min(attempt, schedule.length) - 1];
  return Math.round(wait * (0.9 + random() * 0.1));
}

export type JobRunnerOptions = {
  log: Logger;
  /** How often to look for due jobs when idle. */
  pollMs?: number;
  /** Handlers running at once in this runner. */
  concurrency?: number;
  /** How long a claim lasts without renewal; renewed every third of it while the handler runs. */
  leaseMs?: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /** Kinds that retry on a fixed schedule of waits (ms) instead of the exponential backoff. */
  retrySchedules?: Record<string, readonly number[]>;
  /** How long stop() waits for running handlers before leaving them to their leases. */
  stopTimeoutMs?: number;
};

/** Claims and runs jobs of the kinds it has handlers for. Several may run on one database. */
export class JobRunner {
  readonly workerId = `${process.pid}-${randomUUID()}`;
  private readonly db: Database;
  private readonly handlers: Map<string, JobHandler>;
  private readonly log: Logger;
  private readonly pollMs: number;
  private readonly concurrency: number;
  private readonly leaseMs: number;
  private readonly backoffBaseMs: number;
  private readonly backoffMaxMs: number;
  private readonly retrySchedules: Record<string, readonly number[]>;
  private readonly stopTimeoutMs: number;
  private readonly inFlight = new Set<Promise<void>>();
  private loop: Promise<void> | undefined;
  private stopped = false;
  private backlog = false;
  private wake: (() => void) | undefined;

  constructor(db: Database, handlers: JobHandlers, opts: JobRunnerOptions) {
    this.db = db;
    this.handlers = new Map(Object.entries(handlers));
    this.log = opts.log;
    this.pollMs = opts.pollMs ?? 500;
    this.concurrency = opts.concurrency ?? 10;
    this.leaseMs = opts.leaseMs ?? 60_000;
    this.backoffBaseMs = opts.backoffBaseMs ?? 1000;
    this.backoffMaxMs = opts.backoffMaxMs ?? 3_600_000;
    this.retrySchedules = opts.retrySchedules ?? {};
    this.stopTimeoutMs = opts.stopTimeoutMs ?? 15_000;
  }

  start(): void {
    if (this.loop || this.stopped || this.handlers.size === 0) return;
    this.loop = this.run();
  }

  /** Stops claiming, then waits (bounded) for running handlers to finish. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.loop;
    if (this.inFlight.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((r) => (timer = setTimeout(r, this.stopTimeoutMs)));
    await Promise.race([Promise.allSettled([...this.inFlight]), timeout]);
    clearTimeout(timer);
  }

  /** Claims what is due (up to the free slots) and starts it; returns how many were claimed. */
  async poll(): Promise<number> {
    const free = this.concurrency - this.inFlight.size;
    if (free <= 0) return 0;
    const jobs = await claimJobs(this.db, this.workerId, [...this.handlers.keys()], free, this.leaseMs);
    for (const job of jobs) {
      const running: Promise<void> = this.execute(job).finally(() => {
        this.inFlight.delete(running);
        if (this.backlog) this.wake?.();
      });
      this.inFlight.add(running);
    }
    return jobs.length;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      let requested = 0;
      let claimed = 0;
      try {
        requested = this.concurrency - this.inFlight.size;
        claimed = await this.poll();
      } catch (err) {
        this.log.error({ err: (err as Error).message }, 'claiming jobs failed; retrying');
      }
      // Every free slot filled suggests more are due: claim again as soon as a slot frees up.
      // (With no free slot nothing was asked, and the last answer still stands.)
      if (requested > 0) this.backlog = claimed === requested;
      if (this.backlog && this.inFlight.size < this.concurrency) continue;
      if (!this.stopped) await this.sleep(this.pollMs);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const self = this;
      function done() {
        clearTimeout(timer);
        if (self.wake === done) self.wake = undefined;
        resolve();
      }
      this.wake = done;
    });
  }

  private async execute(job: Job): Promise<void> {
    const ref = { id: job.id, attempts: job.attempts };
    const context = { job_id: job.id, kind: job.kind, attempt: job.attempts };
    try {
      // Only a lapsed lease brings a job back past its last attempt: its worker died running it.
      if (job.attempts > job.max_attempts) {
        await failJob(this.db, ref, this.workerId, 'the worker running the final attempt stopped before it finished (its lease lapsed)', null);
        this.log.error(context, 'job dead-lettered: its worker stopped during the final attempt');
        return;
      }
      const handler = this.handlers.get(job.kind)!;
      const renew = setInterval(() => {
        renewLease(this.db, ref, this.workerId, this.leaseMs).then(
          (ok) => ok || this.log.warn(context, 'job lease lost while its handler ran'),
          (err: Error) => this.log.warn({ ...context, err: err.message }, 'could not renew a job lease'),
        );
      }, Math.max(50, Math.floor(this.leaseMs / 3)));
      let failure: unknown;
      try {
        await handler({ id: job.id, tenantId: job.tenant_id, kind: job.kind, payload: job.payload, attempt: job.attempts, maxAttempts: job.max_attempts });
      } catch (err) {
        failure = err ?? new Error('handler failed');
      } finally {
        clearInterval(renew);
      }
      if (failure === undefined) {
        await completeJob(this.db, ref, this.workerId);
        return;
      }
      const message = describe(failure);
      const final = failure instanceof PermanentJobError || job.attempts >= job.max_attempts;
      const schedule = this.retrySchedules[job.kind];
      const delay = final ? null : schedule?.length ? scheduledDelayMs(job.attempts, schedule) : backoffMs(job.attempts, this.backoffBaseMs, this.backoffMaxMs);
      await failJob(this.db, ref, this.workerId, message, delay);
      if (final) this.log.error({ ...context, err: message }, 'job dead-lettered');
      else this.log.warn({ ...context, err: message, retry_in_ms: delay }, 'job failed; will retry');
    } catch (err) {
      // Recording the outcome failed (database gone?): the lease lapses and the job runs again.
      this.log.error({ ...context, err: (err as Error).message }, 'could not record a job outcome');
    }
  }
}

function describe(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.slice(0, 1000) || 'handler failed';
}
