import type { Database, Tx } from '../../db/database.ts';
import type { GroupCommit, Item } from '../../db/group-commit.ts';
import { uuidv7 } from '../../db/ids.ts';
import { actorType, type Principal } from '../../access/principal.ts';
import { ApiError, FieldErrorList } from '../../http/errors.ts';
import { cursorPage, decodeCursor } from '../../http/pagination.ts';
import { insertEventsStatement, listEvents, type AuditEvent } from './store.ts';

export type Actor = Principal | { kind: 'system'; tenantId: string };

export type AuditEntry = {
  entityType: string;
  entityId: string | null;
  operation: string;
  message: string;
};

export type LogService = ReturnType<typeof createLogService>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

// The instants PostgreSQL and ISO 8601 responses can both hold: an offset can carry a valid
// date-time into year 0 or 10000, and PostgreSQL also refuses offsets beyond ±15:59.
const EARLIEST = Date.parse('0001-01-01T00:00:00Z');
const LATEST = Date.parse('9999-12-31T23:59:59.999Z');

/** A date filter as the UTC instant SQL receives, so PostgreSQL never parses the caller's text. */
function instant(value: string | undefined, field: string, errors: FieldErrorList): string | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) errors.add(field, 'must be a valid date-time');
  else if (ms < EARLIEST || ms > LATEST) errors.add(field, 'must be between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z');
  else return new Date(ms).toISOString();
  return undefined;
}

/** The audit log: one event per state change or use of a secret, written in the change's transaction. */
export function createLogService(deps: { db: Database; groupCommit: GroupCommit }) {
  const { db, groupCommit } = deps;
  const auditTable = groupCommit.table<Omit<AuditEvent, 'created_at'>>('audit_events', { insert: insertEventsStatement });

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
  return {
    /** Records a change in `tx` (or the ambient transaction), or else group-committed on its own. */
    async record(actor: Actor, entry: AuditEntry, tx?: Tx): Promise<void> {
      await groupCommit.write([auditTable.of(toRow(actor, entry))], tx);
    },

    /**
     * Records uses of a secret and resolves once they are durable, so data is never returned
     * unaudited: in the ambient transaction when there is one, otherwise group-committed
     * with other requests' writes (src/db/group-commit.ts).
     */
    async useMany(actor: Actor, entries: AuditEntry[]): Promise<void> {
      await this.writeItems(entries.map((e) => auditTable.of(toRow(actor, e))));
    },

    use(actor: Actor, entry: AuditEntry): Promise<void> {
      return this.useMany(actor, [entry]);
    },

    /** The audit entry as an item of a larger group-committed write (a token with its creation entry). */
    item(actor: Actor, entry: AuditEntry): Item {
      return auditTable.of(toRow(actor, entry));
    },

    /** Writes entries made with `item` (any actors), group-committed and durable before it resolves. */
    async writeItems(items: Item[]): Promise<void> {
      if (items.length > 0) await groupCommit.write(items);
    },

    async list(principal: Principal, q: { start?: string; size: number; entity_type?: string; entity_id?: string; start_date?: string; end_date?: string }) {
      const errors = new FieldErrorList();
      const startDate = instant(q.start_date, 'query.start_date', errors);
      const endDate = instant(q.end_date, 'query.end_date', errors);
      // As instants: the text of two ISO 8601 times with different offsets or precisions does not sort by time.
      if (startDate && endDate && startDate > endDate) errors.add('query.end_date', 'must not be before start_date');
      errors.throwIfAny();
      const before = q.start ? decodeCursor(q.start, ['id']).id : undefined;
      // Anything that is not a UUID would fail the ::uuid cast in SQL and surface as a 500.
      if (before !== undefined && !UUID.test(before)) throw ApiError.field('query.start', 'is not a cursor returned by this endpoint');
      const rows = await listEvents(
        db,
        principal.tenantId,
        { entityType: q.entity_type, entityId: q.entity_id, startDate, endDate, before },
        q.size + 1,
      );
      return cursorPage(rows, q.size, (last: AuditEvent) => ({ id: last.id }));
    },
  };
}
