import pg from 'pg';
import { Coalescer } from './coalescer.ts';
import type { Database, Tx } from './database.ts';

/**
 * Group commit for writes that need no transaction of their own: a token created without an
 * idempotency key with its audit entry and token.created event, the audit entry of a read,
 * a reactor's events. Concurrent writes are queued (src/db/coalescer.ts) and written
 * together as ONE statement: each table's rows of the whole batch in one multi-row INSERT,
 * the tables' INSERTs as data-modifying CTEs of a single WITH, which PostgreSQL runs
 * atomically on its own, so a batch costs one round trip and one WAL flush, with no BEGIN
 * or COMMIT. A caller resolves only once its batch has committed: a write is as durable and
 * as atomic as one written alone (its rows commit together or not at all).
 *
 * Inside an ambient transaction (a request under an idempotency key, or db.transaction), or
 * given a transaction, a write runs the same statement in it instead, so it commits or rolls
 * back with the rest.
 */

/** A data-modifying statement (an INSERT) with its parameters, numbered from $1. */
export type Statement = { sql: string; params: unknown[] };

export type TableSpec<Row, Out> = {
  /** The INSERT of a batch's rows. */
  insert(rows: Row[]): Statement;
  /**
   * Each row's result, from what the INSERT returned (its RETURNING clause). At most one
   * table of a group commit answers this way: the statement's result is that table's rows.
   */
  results?: (rows: Row[], returned: Record<string, unknown>[]) => Out[];
  /**
   * A statement that follows from the inserted rows within the same statement (webhook
   * deliveries for events), given the name of the CTE that holds what the INSERT returned;
   * undefined for none.
   */
  follow?: (cte: string) => Statement | undefined;
};

/** A table registered with a group commit; `of(row)` makes the item that writes one row to it. */
export type Table<Row> = { name: string; of(row: Row): Item };

/** One row bound for one table. */
export type Item = { table: string; row: unknown };

type Registered = { name: string; cte: string; spec: TableSpec<unknown, unknown> };

/**
 * Told of every group-commit statement once it has answered: how many writes it carried,
 * the seconds from its dispatch until its answer was read (waiting for a pool connection,
 * the database, and the event loop getting to the answer), and whether it succeeded. A
 * failed statement's writes are retried in smaller statements, each reported on its own.
 */
export type StatementObserver = (statement: { writes: number; seconds: number; ok: boolean }) => void;

export class GroupCommit {
  private readonly db: Database;
  /** Their INSERTs appear in registration order. */
  private readonly tables: Registered[] = [];
  private readonly coalescer: Coalescer<Item[], unknown[]>;

  constructor(db: Database, opts: { maxBatch?: number; maxInFlight?: number; maxBatchBytes?: number; observe?: StatementObserver } = {}) {
    this.db = db;
    const observe = opts.observe;
    // One statement at a time: under load the writes that arrive while it runs make the next,
    // larger batch (fewer statements and WAL flushes per row), and concurrent batches would only
    // contend for the same index pages and WAL insertion locks. The next batch is sent the
    // moment one returns (src/db/coalescer.ts), so the database does not wait on Coffer.
    const runBatch = (writes: Item[][]) => this.db.withoutAmbient(() => this.run(writes));
    this.coalescer = new Coalescer<Item[], unknown[]>(observe ? (writes) => observed(observe, writes.length, () => runBatch(writes)) : runBatch, {
      maxBatch: opts.maxBatch ?? 256,
      maxInFlight: opts.maxInFlight ?? 1,
      // A token may hold 1 MiB: 256 of them would make a statement of ~350 MB, more than a
      // jsonb parameter may hold (256 MB) and as much again in Coffer's and PostgreSQL's
      // memory. Small writes still fill a batch of 256 well within the bound.
      weigh: (items) => items.reduce((n, item) => n + sizeOf(item.row), 0),
      maxBatchWeight: opts.maxBatchBytes ?? 16 * 1024 * 1024,
      // A database slower than the writes arriving would otherwise hold them all in memory,
      // a request's rows each: past 16 full batches, or 256 MiB, a write is refused at once (a 503).
      maxQueued: 16 * (opts.maxBatch ?? 256),
      maxQueuedWeight: 256 * 1024 * 1024,
      isolateFailures: true,
      isolable: rejectedByDatabase,
    });
  }

  /** Writes waiting for the next statement (the one in flight not counted). */
  get queuedWrites(): number {
    return this.coalescer.queued;
  }

  table<Row, Out = void>(name: string, spec: TableSpec<Row, Out>): Table<Row> {
    if (!/^[a-z_]+$/.test(name)) throw new Error(`table name ${name} must be lowercase letters and underscores`);
    if (this.tables.some((t) => t.name === name)) throw new Error(`table ${name} is registered twice`);
    if (spec.results && this.tables.some((t) => t.spec.results)) throw new Error(`only one table may return results (${name})`);
    this.tables.push({ name, cte: `w_${name}`, spec: spec as TableSpec<unknown, unknown> });
    return { name, of: (row) => ({ table: name, row }) };
  }

  /**
   * Writes the items together (one atomic write) and answers with each item's result, in
   * order: what its table's `results` gave for its row, or undefined.
   */
  write(items: Item[], tx?: Tx): Promise<unknown[]> {
    const unknownTable = items.find((item) => !this.tables.some((t) => t.name === item.table));
    if (unknownTable) return Promise.reject(new Error(`no table ${unknownTable.table} is registered`));
    // Nothing to write: a statement of no INSERTs would be a syntax error (in a transaction, aborting it).
    if (items.length === 0) return Promise.resolve([]);
    const joined = tx ?? this.db.ambientTransaction();
    if (joined) return this.run([items], joined).then(([outs]) => outs);
    return this.coalescer.submit(items);
  }

  /** Every write's rows in one statement, table by table; the results are put back per write. */
  private async run(writes: Item[][], tx?: Tx): Promise<unknown[][]> {
    const outs = writes.map((items) => new Array<unknown>(items.length).fill(undefined));
    const ctes: string[] = [];
    const params: unknown[] = [];
    const add = (name: string, st: Statement) => {
      ctes.push(`${name} AS (${renumber(st.sql, params.length)})`);
      params.push(...st.params);
    };
    let answering: { table: Registered; rows: unknown[]; at: [number, number][] } | undefined;
    for (const table of this.tables) {
      const rows: unknown[] = [];
      const at: [number, number][] = [];
      writes.forEach((items, w) =>
        items.forEach((item, i) => {
          if (item.table !== table.name) return;
          rows.push(item.row);
          at.push([w, i]);
        }),
      );
      if (rows.length === 0) continue;
      add(table.cte, table.spec.insert(rows));
      const follow = table.spec.follow?.(table.cte);
      if (follow) add(`${table.cte}_follow`, follow);
      if (table.spec.results) answering = { table, rows, at };
    }
    const sql = `WITH ${ctes.join(',\n')}\nSELECT ${answering ? `* FROM ${answering.table.cte}` : '1'}`;
    const returned = await this.db.query(sql, params, tx);
    if (answering) {
      const results = answering.table.spec.results!(answering.rows, returned);
      answering.at.forEach(([w, i], k) => (outs[w][i] = results[k]));
    }
    return outs;
  }
}

/** Runs one batch's statement and reports it to the observer, whatever its outcome. */
async function observed<T>(observe: StatementObserver, writes: number, run: () => Promise<T>): Promise<T> {
  const started = performance.now();
  let ok = false;
  try {
    const result = await run();
    ok = true;
    return result;
  } finally {
    // Only a measurement: it must never turn a statement's outcome (a commit, say) into an error.
    try {
      observe({ writes, seconds: (performance.now() - started) / 1000, ok });
    } catch {}
  }
}

/**
 * Whether PostgreSQL answered that the batch's statement failed, for a reason a row may
 * cause (a constraint, a value it rejects, a size limit, a deadlock on a row): the statement
 * rolled back, so its writes can be retried apart. Not a connection lost before the answer
 * (the statement may have committed: a retry would write its rows twice), nor the database
 * refusing work (shutting down, out of connections or memory, a statement cancelled), which
 * retrying writes apart would only prolong; nor an error after the statement answered.
 */
function rejectedByDatabase(err: unknown): boolean {
  return err instanceof pg.DatabaseError && typeof err.code === 'string' && !/^(08|53|57|58|XX)/.test(err.code);
}

/**
 * Roughly the bytes a row's value takes in a statement: its JSON, a bytea as hex. Every write
 * is weighed, so it walks the value without making arrays of its entries.
 */
function sizeOf(value: unknown): number {
  if (typeof value === 'string') return value.length + 2;
  if (value === null || typeof value !== 'object' || value instanceof Date) return 8;
  if (Buffer.isBuffer(value)) return 2 * value.length + 4;
  let n = 2;
  if (Array.isArray(value)) {
    for (const v of value) n += sizeOf(v) + 1;
    return n;
  }
  const o = value as Record<string, unknown>;
  for (const key in o) if (Object.hasOwn(o, key)) n += key.length + sizeOf(o[key]) + 4;
  return n;
}

/** Shifts a statement's $n parameters past those of the statements before it. */
function renumber(sql: string, offset: number): string {
  return offset === 0 ? sql : sql.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`);
}
