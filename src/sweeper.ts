import type { Logger } from './logger.ts';
import type { Services } from './app.ts';
import type { Database } from './db/database.ts';
import { sweepIdempotencyKeys } from './http/idempotency.ts';

/**
 * Periodic clean-up of what has expired. Expired things stop working at their expiry
 * instant (every read checks the time); the sweep only removes them. Deletions are
 * conditional on expiry, so several processes sweeping at once do no harm.
 */
export function startSweeper(services: Services, db: Database, log: Logger, intervalSeconds: number): () => void {
  let running = false;
  const sweep = async () => {
    if (running) return;
    running = true;
    try {
      await services.applications.sweepExpired();
      await services.sessions.sweepExpired();
      await services.tokens.sweepExpired();
      await sweepIdempotencyKeys(db);
    } catch (err) {
      log.error({ err: (err as Error).message }, 'expiry sweep failed; it will run again');
    } finally {
      running = false;
    }
  };
  const timer = setInterval(sweep, intervalSeconds * 1000);
  timer.unref();
  void sweep();
  return () => clearInterval(timer);
}
