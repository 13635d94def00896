import type { Database, Tx } from '../../db/database.ts';
import { uuidv7 } from '../../db/ids.ts';
import { insertEvent } from './store.ts';

export type EventService = ReturnType<typeof createEventService>;

export type DomainEvent = { id: string; type: string; entity_id: string | null; payload: Record<string, unknown>; created_at: Date };

/** Called in the event's transaction: webhook delivery enqueues its jobs here (an outbox). */
export type EventSubscriber = (tenantId: string, event: DomainEvent, tx: Tx) => Promise<void>;

/**
 * Domain events (token.created, reactor.completed, …) recorded in the transaction of the
 * change that causes them, together with the work they cause (webhook deliveries), so
 * neither is lost nor sent for a change that rolled back. Payloads never carry token data.
 */
export function createEventService(deps: { db: Database; subscriber?: EventSubscriber }) {
  const { db, subscriber } = deps;
  return {
    async emit(tenantId: string, type: string, entityId: string | null, payload: Record<string, unknown>, tx?: Tx): Promise<void> {
      const event: DomainEvent = { id: uuidv7(), type, entity_id: entityId, payload, created_at: new Date() };
      const record = async (t: Tx) => {
        await insertEvent(db, tenantId, event, t);
        await subscriber?.(tenantId, event, t);
      };
      await (tx ? record(tx) : db.transaction(record));
    },
  };
}
