import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';
import pg from 'pg';
import { pino } from 'pino';
import { loadConfig, type Config } from '../../src/config.ts';
import { Database } from '../../src/db/database.ts';
import { migrate } from '../../src/db/migrate.ts';
import { createLogger } from '../../src/logger.ts';
import { start, type Running, type StartOptions } from '../../src/main.ts';

const adminUrl = process.env.COFFER_TEST_ADMIN_URL;
const logDir = process.env.COFFER_TEST_LOG_DIR;

/** One statement on a connection of its own, closed after it: for a database no pool is open on. */
export async function queryOnce<T extends pg.QueryResultRow = Record<string, any>>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<T>(sql, params)).rows;
  } finally {
    await c.end();
  }
}

/** A database of its own on the test PostgreSQL, dropped by the returned function. */
export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  if (!adminUrl) throw new Error('run tests with `npm test` (test/run.ts provides the database)');
  const name = `coffer_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/**
 * For the describe block it is called in: a database of its own with a pool of `poolSize`
 * connections on it, migrated unless `migrated: false`, made before the block's tests and
 * closed and dropped after them. Read `.db` inside hooks and tests.
 */
export function suiteDatabase(poolSize: number, opts: { migrated?: boolean } = {}): { readonly db: Database } {
  const log = createLogger('silent');
  let database: { url: string; drop(): Promise<void> } | undefined;
  let db: Database | undefined;
  before(async () => {
    database = await createTestDatabase();
    db = new Database(database.url, poolSize, log);
    if (opts.migrated !== false) await migrate(db.pool, log);
  });
  after(async () => {
    await db?.close();
    await database?.drop();
  });
  return {
    get db() {
      if (!db) throw new Error('suiteDatabase: read .db inside a hook or test, once the database is made');
      return db;
    },
  };
}

/** Records a secret the test handled so the final log scan can prove it was never logged. */
export function rememberSecret(...values: string[]): void {
  if (!logDir) return;
  fs.appendFileSync(path.join(logDir, `secrets-${process.pid}.txt`), values.map((v) => `${v}\n`).join(''));
}

export type TestServer = {
  url: string;
  /** The management key of the tenant created on first start. */
  key: string;
  tenantId: string;
  running: Running;
  config: Config;
  stop(): Promise<void>;
};

/** A logger writing to a file of its own in the scanned log directory (silent outside test/run.ts). */
function testLogger(config: Config) {
  return logDir
    ? createLogger(config.logLevel, pino.destination({ dest: path.join(logDir, `${randomBytes(6).toString('hex')}.log`), sync: true }))
    : createLogger('silent');
}

/**
 * A real Coffer server on a database the test keeps across restarts (startTestServer makes a
 * fresh one each time), with `env` on top of the test defaults; logs go to the scanned log directory.
 */
export function startOnDatabase(databaseUrl: string, env: Record<string, string>): Promise<Running> {
  const config = testConfig(databaseUrl, env);
  return start(config, testLogger(config));
}

/** The configuration of a test server: a free port, debug logs, a small pool, then `env`. */
function testConfig(databaseUrl: string, env: Record<string, string>): Config {
  return loadConfig({ PORT: '0', DATABASE_URL: databaseUrl, LOG_LEVEL: 'debug', DATABASE_POOL_SIZE: '5', ...env });
}

const runningByUrl = new Map<string, Running>();

/** The in-process server listening at `url` (made by startTestServer), for helpers given only a base URL. */
export function runningAt(url: string): Running | undefined {
  return runningByUrl.get(url);
}

/**
 * A real Coffer server on a free port and a fresh database; logs go to the scanned log directory.
 * `opts` as start() takes them (providers of the test's own, say).
 */
export async function startTestServer(env: Record<string, string> = {}, opts: StartOptions = {}): Promise<TestServer> {
  const database = await createTestDatabase();
  // A DATA_DIR of its own: the generated key file must never be shared between servers or land in the repo.
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-test-server-'));
  const config = testConfig(database.url, { DATA_DIR: dataDir, DATABASE_POOL_SIZE: '10', ...env });
  const running = await start(config, testLogger(config), opts);
  const key = running.firstKey!.api_key;
  rememberSecret(key);
  runningByUrl.set(running.url, running);
  return {
    url: running.url,
    key,
    tenantId: running.firstKey!.tenant_id,
    running,
    config,
    async stop() {
      runningByUrl.delete(running.url);
      await running.stop();
      await database.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
