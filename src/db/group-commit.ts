import { Coalescer } from './coalescer.ts';
import type { Database, Tx } from './database.ts';

/**
 * Group commit for writes that need no transaction of their own: a token created without an
 * idempotency key with its audit entry and token.created event, the audit entry of a read,
 * a reactor's events. Concurrent writes are queued (src/db/coalescer.ts) and written
 * together: each table's rows of the whole batch in one multi-row statement, all tables in
 * one transaction. A caller resolves only once its batch has committed, so a write is as
 * durable and as atomic as one written alone (its rows commit together or not at all), while
 * PostgreSQL runs a few statements and one WAL flush per batch instead of per request.
 *
 * Inside an ambient transaction (a request under an idempotency key, or db.transaction) a
 * write (or one given its transaction) joins it instead, so it commits or rolls back with the rest.
 */
export type TableWriter<Row, Out> = (rows: Row[], tx: Tx) => Promise<Out[] | void>;

/** A table registered with a group commit; `of(row)` makes the item that writes one row to it. */
export type Table<Row, Out> = { name: string; of(row: Row): Item };

/** One row bound for one table. */
export type Item = { table: string; row: unknown };

type Registered = { name: string; write: TableWriter<unknown, unknown>; oneStatement: boolean };

export class GroupCommit {
  private readonly db: Database;
  /** Written in registration order. */
  private readonly tables: Registered[] = [];
  private readonly coalescer: Coalescer<Item[], unknown[]>;

  constructor(db: Database, opts: { maxBatch?: number; maxInFlight?: number } = {}) {
    this.db = db;
    this.coalescer = new Coalescer((writes) => this.db.withoutAmbient(() => this.commit(writes)), {
      maxBatch: opts.maxBatch ?? 256,
      maxInFlight: opts.maxInFlight ?? 4,
      isolateFailures: true,
    });
  }

  /**
   * `write` gets the rows of a whole batch and answers with one result per row (or nothing).
   * `oneStatement`: it runs exactly one statement, which PostgreSQL makes atomic by itself, so
   * a batch of this table alone needs no BEGIN and COMMIT round trips.
   */
  table<Row, Out = void>(name: string, write: TableWriter<Row, Out>, opts: { oneStatement?: boolean } = {}): Table<Row, Out> {
    if (this.tables.some((t) => t.name === name)) throw new Error(`table ${name} is registered twice`);
    this.tables.push({ name, write: write as TableWriter<unknown, unknown>, oneStatement: opts.oneStatement ?? false });
    return { name, of: (row) => ({ table: name, row }) };
  }

  /**
   * Writes the items together (one atomic write) and answers with each item's result, in
   * order: what its table's writer returned for its row, or undefined.
   */
  write(items: Item[], tx?: Tx): Promise<unknown[]> {
    const unknownTable = items.find((item) => !this.tables.some((t) => t.name === item.table));
    if (unknownTable) return Promise.reject(new Error(`no table ${unknownTable.table} is registered`));
    const joined = tx ?? this.db.ambientTransaction();
    if (joined) return this.writeAll([items], joined).then(([outs]) => outs);
    return this.coalescer.submit(items);
  }

  /** A batch: in a transaction, unless it touches one table whose writer is one statement. */
  private async commit(writes: Item[][]): Promise<unknown[][]> {
    const names = new Set(writes.flatMap((items) => items.map((item) => item.table)));
    const only = names.size === 1 ? this.tables.find((t) => names.has(t.name)) : undefined;
    if (!only?.oneStatement) return this.db.transaction((tx) => this.writeAll(writes, tx));
    const client = await this.db.pool.connect();
    try {
      return await this.writeAll(writes, client);
    } finally {
      client.release();
    }
  }

  /** Every write's rows, table by table in registration order; the results are put back per write. */
  private async writeAll(writes: Item[][], tx: Tx): Promise<unknown[][]> {
    const outs = writes.map((items) => new Array<unknown>(items.length).fill(undefined));
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
      const results = await table.write(rows, tx);
      if (results) at.forEach(([w, i], k) => (outs[w][i] = results[k]));
    }
    return outs;
  }
}
