import type { Logger } from './logger.ts';
import type { Services } from './app.ts';
import type { Config } from './config.ts';
import type { Database } from './db/database.ts';
import { sweepJobs } from './db/jobs.ts';
import { sweepIdempotencyKeys } from './http/idempotency.ts';

/**
 * Periodic clean-up of what has expired. Expired things stop working at their expiry
 * instant (every read checks the time); the sweep only removes them. Deletions are
 * conditional on expiry, so several processes sweeping at once do no harm. Each sweep
 * runs on its own: one failing does not hold back the others.
 */
export function startSweeper(
  services: Services,
  db: Database,
  log: Logger,
  config: Pick<Config, 'sweepIntervalSeconds' | 'jobRetentionDays' | 'jobDeadRetentionDays'>,
): () => void {
  const sweeps: [string, () => Promise<unknown>][] = [
    ['applications', () => services.applications.sweepExpired()],
    ['sessions', () => services.sessions.sweepExpired()],
    ['tokens', () => services.tokens.sweepExpired()],
    ['token intents', () => services.tokenIntents.sweepExpired()],
    ['3ds sessions', () => services.threeds.sweepExpired()],
    // Not expiry but recovery: processor calls whose answer was never recorded are made again with their keys.
    ['unanswered processor calls', () => services.transactions.recovery.resumeUnanswered()],
    ['expired buyer approvals', () => services.transactions.recovery.expireApprovals()],
    // PENDING invitations past their expiry are EXPIRED (reads show it already); deleted ones are kept as long as dead jobs, so their links can say why they ended.
    ['invitations', () => services.invitations.sweep(config.jobDeadRetentionDays)],
    ['member sessions and sign-in links', () => services.signin.sweep()],
    ['idempotency keys', () => sweepIdempotencyKeys(db)],
    ['finished jobs', () => sweepJobs(db, { doneDays: config.jobRetentionDays, deadDays: config.jobDeadRetentionDays })],
    // Delivery records explain dead-lettered deliveries, so they are kept as long as dead jobs.
    ['webhook deliveries', () => services.webhooks.sweepDeliveries(config.jobDeadRetentionDays)],
    // Events are what the delivery records name: kept as long.
    ['events', () => services.events.sweep(config.jobDeadRetentionDays)],
    // A reactor result (of a sync or an async run) is read soon after the run; it lives as long as finished jobs.
    ['reactor results', () => services.reactors.sweepResults(config.jobRetentionDays)],
    // A message's status outlives its job as long as jobs do; messages whose job ended unsettled are given up on.
    ['mail statuses', () => services.mail.sweep({ sentDays: config.jobRetentionDays, failedDays: config.jobDeadRetentionDays })],
  ];
  let running = false;
  const sweep = async () => {
    if (running) return;
    running = true;
    try {
      for (const [what, run] of sweeps) {
        try {
          await run();
        } catch (err) {
          log.error({ err: (err as Error).message, sweep: what }, 'expiry sweep failed; it will run again');
        }
      }
    } finally {
      running = false;
    }
  };
  const timer = setInterval(sweep, config.sweepIntervalSeconds * 1000);
  timer.unref();
  void sweep();
  return () => clearInterval(timer);
}
