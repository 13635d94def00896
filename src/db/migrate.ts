import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import type { Logger } from '../logger.ts';

const MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');
// Any constant works; it only has to be the same in every Coffer process.
const MIGRATION_LOCK = 726_411_903;

/**
 * Applies the numbered SQL files in order, each in its own transaction. The session
 * advisory lock lets many processes start at once: one migrates, the others wait and
 * then find nothing left to do. Migrations are forward-only.
 */
export async function migrate(pool: pg.Pool, log: Logger): Promise<string[]> {
  const client = await pool.connect();
  let current: string | undefined;
  // What a migration has to tell the operator (RAISE NOTICE: a step left for them) reaches the log.
  const onNotice = (notice: { message?: string }) => {
    if (current) log.warn({ migration: current, notice: notice.message }, 'migration notice');
  };
  client.on('notice', onNotice);
  try {
    // Building an index on a large table, or waiting for another process's migrations, may
    // take longer than DATABASE_STATEMENT_TIMEOUT_MS allows a request: no limit here. The
    // connection is closed afterwards rather than returned to the pool without its limit.
    await client.query('SET statement_timeout = 0');
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set((await client.query('SELECT version FROM schema_migrations')).rows.map((r) => r.version as string));
    const applied: string[] = [];
    for (const file of migrationFiles()) {
      const version = file.replace(/\.sql$/, '');
      if (done.has(version)) continue;
      const sql = fs.readFileSync(path.join(MIGRATIONS_DIR, file), 'utf8');
      current = version;
      await client.query('BEGIN');
      try {
        await client.query(sql);
        await client.query('INSERT INTO schema_migrations (version) VALUES ($1)', [version]);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK');
        throw new Error(`migration ${file} failed: ${(err as Error).message}`);
      }
      applied.push(version);
      log.info({ migration: version }, 'migration applied');
    }
    return applied;
  } finally {
    current = undefined;
    client.off('notice', onNotice);
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => {});
    client.release(true);
  }
}

function migrationFiles(): string[] {
  return fs.readdirSync(MIGRATIONS_DIR).filter((f) => /^\d{3}_[a-z0-9_]+\.sql$/.test(f)).sort();
}
