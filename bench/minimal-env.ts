/**
 * How bench/run.ts hands a minimal program (bench/minimal-*.ts) what it works with, in the
 * environment of the child it starts: the database as PG*, and the tokens to store again as
 * TOKEN_IDS (comma-separated) and TOKEN_CARD (JSON). Each pair of functions writes and reads one.
 */
import type pg from 'pg';
import { createTokenWork, type TokenWork } from './minimal-token-work.ts';

type Env = Record<string, string | undefined>;

export function databaseEnv(db: pg.PoolConfig): Record<string, string> {
  return { PGHOST: String(db.host), PGPORT: String(db.port), PGPASSWORD: String(db.password) };
}

export function databaseFromEnv(env: Env): pg.PoolConfig {
  return { host: env.PGHOST, port: Number(env.PGPORT), user: 'postgres', password: env.PGPASSWORD, database: 'postgres' };
}

export function tokensEnv(ids: string[], card: unknown): Record<string, string> {
  return { TOKEN_IDS: ids.join(','), TOKEN_CARD: JSON.stringify(card) };
}

/** The token work for the tokens named in `env`, or undefined when it names none. */
export async function tokenWorkFromEnv(env: Env, db: pg.PoolConfig): Promise<TokenWork | undefined> {
  return env.TOKEN_IDS ? createTokenWork({ db, ids: env.TOKEN_IDS.split(','), card: JSON.parse(env.TOKEN_CARD!) }) : undefined;
}
