import pg from 'pg';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import { Database } from './database.ts';
import { startEmbeddedPostgres } from './embedded/start.ts';
import { migrate } from './migrate.ts';

export type OpenDatabase = { db: Database; url: string; close(): Promise<void> };

/**
 * DATABASE_URL when set, otherwise the embedded PostgreSQL under DATA_DIR.
 * Whichever process starts the embedded server (`serve` or a one-shot command such as
 * `init`) stops it on exit, unless other processes still use it; `serve` also adopts one
 * it finds without a live owner. A server left without one is stopped by the last process
 * out; one a running `serve` owns is only borrowed.
 */
export async function openDatabase(
  config: Config,
  log: Logger,
  opts: { takeOwnership: boolean; migrate: boolean },
): Promise<OpenDatabase> {
  const embedded = config.databaseUrl
    ? undefined
    : await startEmbeddedPostgres(config.dataDir, log, { takeOwnership: opts.takeOwnership, systemDir: config.embeddedPostgresDir });
  const url = config.databaseUrl ?? embedded!.url;
  if (config.databaseUrl) await checkReachable(config.databaseUrl);
  const db = new Database(url, config.databasePoolSize, log, { statementTimeoutMs: config.databaseStatementTimeoutMs });
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

/** Long enough for a distant server behind TLS; a start that waits longer would look hung. */
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * One bounded connection before anything else. Without it a server that accepts the
 * connection but never answers (or a firewall that drops packets) leaves the start waiting
 * with nothing on screen, and a refused one fails with a bare "ECONNREFUSED" that does not
 * say it was DATABASE_URL.
 */
async function checkReachable(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (err) {
    const message = (err as Error).message;
    const reason = /timeout/i.test(message) ? `no answer within ${CONNECT_TIMEOUT_MS / 1000} s` : message;
    throw new Error(`cannot connect to the database in DATABASE_URL (${describe(url)}): ${reason}`);
  } finally {
    await client.end().catch(() => {});
  }
}

/** Where DATABASE_URL points, without its password: a `host` parameter names a socket directory. */
function describe(url: string): string {
  const u = new URL(url);
  const user = u.username ? `${decodeURIComponent(u.username)}@` : '';
  return `${user}${u.searchParams.get('host') || u.hostname || 'localhost'}:${u.port || 5432}${u.pathname.length > 1 ? u.pathname : ''}`;
}
