import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import { Database } from './database.ts';
import { startEmbeddedPostgres } from './embedded.ts';
import { migrate } from './migrate.ts';

export type OpenDatabase = { db: Database; url: string; close(): Promise<void> };

/**
 * DATABASE_URL when set, otherwise the embedded PostgreSQL under DATA_DIR.
 * `serve` owns (and on exit stops) an embedded server it starts or finds orphaned;
 * one-shot commands such as `init` only borrow one.
 */
export async function openDatabase(
  config: Config,
  log: Logger,
  opts: { takeOwnership: boolean; migrate: boolean },
): Promise<OpenDatabase> {
  const embedded = config.databaseUrl
    ? undefined
    : await startEmbeddedPostgres(config.dataDir, log, { takeOwnership: opts.takeOwnership });
  const url = config.databaseUrl ?? embedded!.url;
  const db = new Database(url, config.databasePoolSize, log);
  try {
    if (opts.migrate) await migrate(db.pool, log);
  } catch (err) {
    await db.close();
    await embedded?.release();
    throw err;
  }
  return {
    db,
    url,
    async close() {
      await db.close();
      await embedded?.release();
    },
  };
}
