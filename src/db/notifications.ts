import pg from 'pg';
import type { Logger } from '../logger.ts';
import type { Database, Tx } from './database.ts';

const CHANNEL = 'coffer_invalidate';

/**
 * Cache invalidation across processes with PostgreSQL LISTEN/NOTIFY. A notice sent
 * inside a transaction is delivered on commit, so others never drop a cache entry
 * before the change is visible. Caches also expire on their own in case a notice is
 * missed while the listener reconnects.
 */
export class Notifier {
  private readonly url: string;
  private readonly db: Database;
  private readonly log: Logger;
  private readonly handlers = new Set<(topic: string) => void>();
  private client: pg.Client | undefined;
  private closed = false;
  private retry: NodeJS.Timeout | undefined;

  constructor(url: string, db: Database, log: Logger) {
    this.url = url;
    this.db = db;
    this.log = log;
  }

  onInvalidate(handler: (topic: string) => void): void {
    this.handlers.add(handler);
  }

  /** Tells every process, this one included, to drop cached state for the topic. */
  async invalidate(topic: string, tx?: Tx): Promise<void> {
    this.emit(topic);
    await this.db.query('SELECT pg_notify($1, $2)', [CHANNEL, topic], tx);
  }

  /**
   * Drops this process's cached state again once a transaction has committed: a request
   * that raced the change may have re-cached the old state before the commit.
   */
  invalidateLocal(topic: string): void {
    this.emit(topic);
  }

  async start(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({ connectionString: this.url });
    client.on('notification', (msg) => this.emit(msg.payload ?? ''));
    client.on('error', (err) => this.reconnect(client, err));
    client.on('end', () => this.reconnect(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
      this.client = client;
      // Anything may have changed while we were not listening.
      this.emit('*');
    } catch (err) {
      this.reconnect(client, err as Error);
    }
  }

  private reconnect(client: pg.Client, err?: Error): void {
    if (this.closed || this.client !== client && this.client !== undefined) return;
    this.client = undefined;
    client.removeAllListeners('end');
    client.end().catch(() => {});
    if (err) this.log.warn({ err: err.message }, 'invalidation listener lost its connection; reconnecting');
    clearTimeout(this.retry);
    this.retry = setTimeout(() => void this.start(), 1000);
    this.retry.unref();
  }

  private emit(topic: string): void {
    for (const handler of this.handlers) handler(topic);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    const client = this.client;
    this.client = undefined;
    if (client) {
      client.removeAllListeners('end');
      await client.end().catch(() => {});
    }
  }
}
