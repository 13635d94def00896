import { AsyncLocalStorage } from 'node:async_hooks';
import pg from 'pg';
import type { Logger } from '../logger.ts';

// COUNT(*) and BIGINT arrive as strings by default; our counts fit in a double.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export type Tx = pg.PoolClient;
export type Row = Record<string, unknown>;

/**
 * The one database handle. Queries run on the ambient transaction when there is one —
 * a request under an idempotency key runs whole inside one, so its writes and its
 * stored response commit together — otherwise on the pool.
 */
export class Database {
  readonly pool: pg.Pool;
  private readonly ambient = new AsyncLocalStorage<Tx>();
  private savepoints = 0;
  private readonly names = new Map<string, string>();

  /** `statementTimeoutMs`: DATABASE_STATEMENT_TIMEOUT_MS, 0 or absent for none. */
  constructor(url: string, poolSize: number, log: Logger, opts: { statementTimeoutMs?: number } = {}) {
    // A database that hangs or a network that drops packets must not hold requests for minutes:
    // a connection takes at most 10 s to open (or to come free in the pool), and TCP keepalive
    // notices a peer that went away silently.
    const timeout = Math.trunc(opts.statementTimeoutMs ?? 0);
    this.pool = new pg.Pool({
      connectionString: url,
      max: poolSize,
      idleTimeoutMillis: 30_000,
      connectionTimeoutMillis: 10_000,
      keepAlive: true,
      // A statement (or a lock wait) past the limit is cancelled, so no request, search or
      // sweep holds a connection indefinitely. Set with SET before the pool hands the new
      // connection out, rather than as a startup parameter, which connection poolers such as
      // PgBouncer refuse.
      ...(timeout > 0 ? { onConnect: async (client: pg.PoolClient) => void (await client.query(`SET statement_timeout = ${timeout}`)) } : {}),
    } as pg.PoolConfig);
    // An idle client losing its connection must not take the process down.
    this.pool.on('error', (err) => log.error({ err: err.message }, 'idle database connection failed'));
    // Nor a checked-out one: the pool listens only to idle clients, and a connection lost while a
    // request holds it (a database restart or failover, a killed session) is otherwise an
    // unhandled 'error' event that ends the process. The query in flight fails with the error
    // anyway (its transaction rolls back), and the pool drops the broken client on release.
    this.pool.on('connect', (client) => {
      client.on('error', (err) => log.debug({ err: err.message }, 'database connection lost'));
    });
  }

  async query<T extends Row = Row>(sql: string, params: unknown[] = [], tx?: Tx): Promise<T[]> {
    const runner = tx ?? this.ambient.getStore() ?? this.pool;
    const result = await runner.query({ text: sql, values: params, name: this.statementName(sql) });
    return result.rows as T[];
  }

  /**
   * Every statement runs as a named prepared statement, so PostgreSQL parses and plans
   * each distinct SQL text once per connection instead of on every call. Store SQL is
   * fixed text with parameters, so the number of distinct names stays small.
   */
  private statementName(sql: string): string | undefined {
    let name = this.names.get(sql);
    if (name === undefined) {
      if (this.names.size >= 2000) return undefined;
      name = `s${this.names.size}`;
      this.names.set(sql, name);
    }
    return name;
  }

  async one<T extends Row = Row>(sql: string, params: unknown[] = [], tx?: Tx): Promise<T | undefined> {
    return (await this.query<T>(sql, params, tx))[0];
  }

  /** Runs fn in a transaction; nested inside another one it becomes a savepoint. */
  async transaction<T>(fn: (tx: Tx) => Promise<T>, outer?: Tx): Promise<T> {
    const parent = outer ?? this.ambient.getStore();
    if (parent) return this.savepoint(parent, fn);
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const result = await this.ambient.run(client, () => fn(client));
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw err;
    } finally {
      client.release();
    }
  }

  /** Runs fn with tx as the ambient transaction for every query it makes. */
  withAmbient<T>(tx: Tx, fn: () => T): T {
    return this.ambient.run(tx, fn);
  }

  /** Whether the caller runs inside a transaction (a request under an idempotency key, or db.transaction). */
  inTransaction(): boolean {
    return this.ambient.getStore() !== undefined;
  }

  /** The ambient transaction, if any: for writers that join it rather than open a savepoint. */
  ambientTransaction(): Tx | undefined {
    return this.ambient.getStore();
  }

  /** Runs fn outside any ambient transaction: for writes that must persist whatever the request does. */
  withoutAmbient<T>(fn: () => T): T {
    return this.ambient.exit(fn);
  }

  private async savepoint<T>(tx: Tx, fn: (tx: Tx) => Promise<T>): Promise<T> {
    const name = `sp_${++this.savepoints}`;
    await tx.query(`SAVEPOINT ${name}`);
    try {
      const result = await this.ambient.run(tx, () => fn(tx));
      await tx.query(`RELEASE SAVEPOINT ${name}`);
      return result;
    } catch (err) {
      await tx.query(`ROLLBACK TO SAVEPOINT ${name}`).catch(() => {});
      throw err;
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

/** Maps a PostgreSQL unique violation to a domain error at the call site. */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: string; constraint?: string };
  return e?.code === '23505' && (constraint === undefined || e.constraint === constraint);
}

/** A row referring to one that no longer exists (deleted concurrently): the caller maps it to a 404. */
export function isForeignKeyViolation(err: unknown): boolean {
  return (err as { code?: string })?.code === '23503';
}
