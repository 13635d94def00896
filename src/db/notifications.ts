import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Logger } from '../logger.ts';
import type { Database, Tx } from './database.ts';

const CHANNEL = 'coffer_invalidate';
// Besides topics ('auth', 'proxy', '*'), CHANNEL carries the control messages of the barrier protocol below.
const MEMBER = 'member:'; // member:<process id> — "I am listening" (on connect, and as a heartbeat)
const LEAVE = 'leave:'; // leave:<process id> — a clean shutdown
const BARRIER = 'barrier:'; // barrier:<sender id>:<nonce> — every other member acknowledges on the sender's channel
const HEARTBEAT_MS = 10_000;
/** A member not heard from for this long is taken for dead and no longer waited for. */
const MEMBER_TTL_MS = 3 * HEARTBEAT_MS;
/** A barrier waits at most this long (a member that died unannounced); then the cache lifetime bounds staleness. */
const BARRIER_TIMEOUT_MS = 1000;

type Barrier = { echoed: boolean; acked: Set<string>; waiting: Set<string>; done: () => void };

/**
 * Cache invalidation across processes with PostgreSQL LISTEN/NOTIFY. A notice sent
 * inside a transaction is delivered on commit, so others never drop a cache entry
 * before the change is visible. Caches also expire on their own in case a notice is
 * missed while the listener reconnects.
 *
 * A notice is asynchronous: the process that revoked a key could answer its client before
 * another process has read the notice, and a request racing to that process would still
 * be served from its cache. So the writer waits for a barrier (see invalidateLocal): the
 * processes listening on the database announce themselves, and each acknowledges a
 * barrier once it has read every notice before it (a listener gets notices in commit
 * order), that is, once it has dropped the revoked entry.
 */
export class Notifier {
  private readonly url: string;
  private readonly db: Database;
  private readonly log: Logger;
  private readonly handlers = new Set<(topic: string) => void>();
  /** This process as a member of the protocol; its acknowledgements arrive on its own channel. */
  private readonly id = randomBytes(8).toString('hex');
  private readonly ackChannel = `coffer_ack_${this.id}`;
  private readonly members = new Map<string, number>();
  private readonly barriers = new Map<string, Barrier>();
  private client: pg.Client | undefined;
  private closed = false;
  private retry: NodeJS.Timeout | undefined;
  private heartbeat: NodeJS.Timeout | undefined;

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
   * Call once the transaction that sent `invalidate` has committed. Drops this process's
   * cached state again (a request that raced the change may have re-cached the old state
   * before the commit), then resolves once every other listening process has acknowledged
   * a barrier sent after the commit — so has dropped its entries too. Awaited before the
   * reply, it makes a revocation hold for the very next request to any process.
   *
   * Inside an enclosing transaction (a request under an idempotency key) the notice goes
   * out only when that commits, so there is nothing to wait for yet; nor without a listener.
   */
  invalidateLocal(topic: string): Promise<void> {
    this.emit(topic);
    if (!this.client || this.db.inTransaction()) return Promise.resolve();
    return this.barrier();
  }

  private async barrier(): Promise<void> {
    const client = this.client;
    if (!client) return;
    const nonce = randomUUID();
    let timer: NodeJS.Timeout | undefined;
    let barrier: Barrier | undefined;
    const settled = new Promise<void>((resolve) => {
      barrier = { echoed: false, acked: new Set(), waiting: new Set(), done: resolve };
      this.barriers.set(nonce, barrier);
      timer = setTimeout(resolve, BARRIER_TIMEOUT_MS);
    });
    try {
      await client.query('SELECT pg_notify($1, $2)', [CHANNEL, `${BARRIER}${this.id}:${nonce}`]);
      await settled;
      if (!barrier!.echoed || barrier!.waiting.size > 0) {
        this.log.warn({ unacknowledged: [...barrier!.waiting], echoed: barrier!.echoed }, 'invalidation barrier timed out; other processes rely on their cache lifetime');
      }
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'could not send an invalidation barrier');
    } finally {
      clearTimeout(timer);
      this.barriers.delete(nonce);
    }
  }

  async start(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({ connectionString: this.url });
    client.on('notification', (msg) => this.receive(msg.channel, msg.payload ?? ''));
    client.on('error', (err) => this.reconnect(client, err));
    client.on('end', () => this.reconnect(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
      await client.query(`LISTEN ${this.ackChannel}`);
      this.client = client;
      // Anything may have changed while we were not listening.
      this.emit('*');
      this.announce();
      clearInterval(this.heartbeat);
      this.heartbeat = setInterval(() => this.announce(), HEARTBEAT_MS);
      this.heartbeat.unref();
    } catch (err) {
      this.reconnect(client, err as Error);
    }
  }

  /** Sent on the listener's own connection: a busy pool must not hold up the protocol. */
  private send(channel: string, payload: string): void {
    this.client?.query('SELECT pg_notify($1, $2)', [channel, payload]).catch(() => {});
  }

  private announce(): void {
    const now = Date.now();
    for (const [id, seen] of this.members) if (now - seen > MEMBER_TTL_MS) this.members.delete(id);
    this.send(CHANNEL, MEMBER + this.id);
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

  private receive(channel: string, payload: string): void {
    if (channel === this.ackChannel) {
      const [nonce, member] = payload.split(':');
      const barrier = this.barriers.get(nonce);
      if (barrier) {
        barrier.acked.add(member);
        barrier.waiting.delete(member);
        if (barrier.echoed && barrier.waiting.size === 0) barrier.done();
      }
    } else if (payload.startsWith(MEMBER)) {
      const member = payload.slice(MEMBER.length);
      if (member === this.id) return;
      const known = this.members.has(member);
      this.members.set(member, Date.now());
      // A newcomer learns of every member at once rather than at their next heartbeat.
      if (!known) this.announce();
    } else if (payload.startsWith(LEAVE)) {
      const member = payload.slice(LEAVE.length);
      this.members.delete(member);
      for (const barrier of this.barriers.values()) {
        barrier.waiting.delete(member);
        if (barrier.echoed && barrier.waiting.size === 0) barrier.done();
      }
    } else if (payload.startsWith(BARRIER)) {
      const [sender, nonce] = payload.slice(BARRIER.length).split(':');
      if (sender !== this.id) {
        // Every notice committed before the barrier has been read (and its handlers run) by now.
        this.send(`coffer_ack_${sender}`, `${nonce}:${this.id}`);
        return;
      }
      const barrier = this.barriers.get(nonce);
      if (!barrier) return;
      // The members heard from before our own barrier came back are those that could hold stale entries.
      barrier.echoed = true;
      const now = Date.now();
      for (const [member, seen] of this.members) {
        if (now - seen <= MEMBER_TTL_MS && !barrier.acked.has(member)) barrier.waiting.add(member);
      }
      if (barrier.waiting.size === 0) barrier.done();
    } else {
      this.emit(payload);
    }
  }

  private emit(topic: string): void {
    for (const handler of this.handlers) handler(topic);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    clearInterval(this.heartbeat);
    const client = this.client;
    this.client = undefined;
    if (client) {
      client.removeAllListeners('end');
      // Nobody need wait for this process's acknowledgements any more.
      await client.query('SELECT pg_notify($1, $2)', [CHANNEL, LEAVE + this.id]).catch(() => {});
      await client.end().catch(() => {});
    }
  }
}
