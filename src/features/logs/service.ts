import type { Database, Tx } from '../../db/database.ts';
import { uuidv7 } from '../../db/ids.ts';
import { actorType, type Principal } from '../../access/principal.ts';
import { ApiError } from '../../http/errors.ts';
import { cursorPage, decodeCursor } from '../../http/pagination.ts';
import { insertEvent, insertEventsBatch, listEvents, type AuditEvent } from './store.ts';

export type Actor = Principal | { kind: 'system'; tenantId: string };

export type AuditEntry = {
  entityType: string;
  entityId: string | null;
  operation: string;
  message: string;
};

export type LogService = ReturnType<typeof createLogService>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The audit log: one event per state change or use of a secret, written in the change's transaction. */
export function createLogService(deps: { db: Database }) {
  const { db } = deps;

  function toRow(actor: Actor, entry: AuditEntry): Omit<AuditEvent, 'created_at'> {
    const system = actor.kind === 'system';
    return {
      id: uuidv7(),
      tenant_id: actor.tenantId,
      actor_id: system ? null : actor.actorId,
      actor_type: system ? 'system' : actorType(actor),
      entity_type: entry.entityType,
      entity_id: entry.entityId,
      operation: entry.operation,
      message: entry.message,
    };
  }

  // Uses of a secret outside any transaction (reads, detokenization) are written in batches:
  // every request queued while one insert is in flight goes into the next one.
  let queue: { row: Omit<AuditEvent, 'created_at'>; done: (err?: unknown) => void }[] = [];
  let flushing = false;
  async function flush(): Promise<void> {
    flushing = true;
    while (queue.length > 0) {
      const batch = queue.slice(0, 500);
      queue = queue.slice(batch.length);
      try {
        await db.withoutAmbient(() => insertEventsBatch(db, batch.map((b) => b.row)));
        for (const b of batch) b.done();
      } catch (err) {
        for (const b of batch) b.done(err);
      }
    }
    flushing = false;
  }

  return {
    async record(actor: Actor, entry: AuditEntry, tx?: Tx): Promise<void> {
      const row = toRow(actor, entry);
      const { tenant_id, ...rest } = row;
      await insertEvent(db, tenant_id, rest, tx);
    },

    /**
     * Records a use of a secret and resolves once the event is durable, so data is never
     * returned unaudited. Inside a transaction it joins it; otherwise it is batched.
     */
    /** Several uses at once: one statement inside a transaction, one batch entry each outside. */
    async useMany(actor: Actor, entries: AuditEntry[]): Promise<void> {
      if (entries.length === 0) return;
      if (db.inTransaction()) return insertEventsBatch(db, entries.map((e) => toRow(actor, e)));
      await Promise.all(entries.map((e) => this.use(actor, e)));
    },

    use(actor: Actor, entry: AuditEntry): Promise<void> {
      if (db.inTransaction()) return this.record(actor, entry);
      return new Promise((resolve, reject) => {
        queue.push({ row: toRow(actor, entry), done: (err) => (err ? reject(err) : resolve()) });
        if (!flushing) void flush();
      });
    },

    async list(principal: Principal, q: { start?: string; size: number; entity_type?: string; entity_id?: string; start_date?: string; end_date?: string }) {
      // As instants: the text of two ISO 8601 times with different offsets or precisions does not sort by time.
      if (q.start_date && q.end_date && Date.parse(q.start_date) > Date.parse(q.end_date)) {
        throw ApiError.field('query.end_date', 'must not be before start_date');
      }
      const before = q.start ? decodeCursor(q.start, ['id']).id : undefined;
      // Anything that is not a UUID would fail the ::uuid cast in SQL and surface as a 500.
      if (before !== undefined && !UUID.test(before)) throw ApiError.field('query.start', 'is not a cursor returned by this endpoint');
      const rows = await listEvents(
        db,
        principal.tenantId,
        { entityType: q.entity_type, entityId: q.entity_id, startDate: q.start_date, endDate: q.end_date, before },
        q.size + 1,
      );
      return cursorPage(rows, q.size, (last: AuditEvent) => ({ id: last.id }));
    },
  };
}
