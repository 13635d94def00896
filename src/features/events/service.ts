import type { Database, Tx } from '../../db/database.ts';
import type { GroupCommit, Item, Statement } from '../../db/group-commit.ts';
import { uuidv7, uuidv7Floor } from '../../db/ids.ts';
import { deleteEventsBefore, insertEventsStatement } from './store.ts';

export type EventService = ReturnType<typeof createEventService>;

export type DomainEvent = { id: string; type: string; entity_id: string | null; payload: Record<string, unknown>; created_at: Date };

/** An event with the tenant it belongs to, as written. */
export type TenantEvent = DomainEvent & { tenant_id: string };

/**
 * The work events cause, written in the same statement as the events (an outbox): given the
 * name of the CTE holding the inserted events (id, tenant_id, type, payload, created_at), the
 * INSERT of that work. Webhook delivery jobs are made this way.
 */
export type EventSubscriber = (eventsCte: string) => Statement;

/**
 * Domain events (token.created, reactor.completed, …) recorded in the transaction of the
 * change that causes them, together with the work they cause (webhook deliveries), so
 * neither is lost nor sent for a change that rolled back. Payloads never carry token data.
 * Events with no transaction of their own are group-committed (src/db/group-commit.ts).
 */
export function createEventService(deps: { db: Database; groupCommit: GroupCommit; subscriber?: EventSubscriber }) {
  const { db, groupCommit, subscriber } = deps;
  const eventTable = groupCommit.table<TenantEvent>('events', { insert: insertEventsStatement, follow: subscriber });

  function item(tenantId: string, type: string, entityId: string | null, payload: Record<string, unknown>): Item {
    return eventTable.of({ id: uuidv7(), tenant_id: tenantId, type, entity_id: entityId, payload, created_at: new Date() });
  }

  return {
    /** Records the event in `tx` (or the ambient transaction), or else group-committed on its own. */
    async emit(tenantId: string, type: string, entityId: string | null, payload: Record<string, unknown>, tx?: Tx): Promise<void> {
      await groupCommit.write([item(tenantId, type, entityId, payload)], tx);
    },

    /** The event as an item of a larger group-committed write (a token with its token.created). */
    item,

    /**
     * Deletes events older than `days`. Nothing reads them back (a delivery job carries its
     * event), so they are a record for operators, kept as long as the delivery records.
     */
    sweep(days: number): Promise<number> {
      return deleteEventsBefore(db, uuidv7Floor(Date.now() - days * 86_400_000));
    },
  };
}
