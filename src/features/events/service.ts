import type { Database, Tx } from '../../db/database.ts';
import { uuidv7 } from '../../db/ids.ts';
import { insertEvent } from './store.ts';

export type EventService = ReturnType<typeof createEventService>;

/**
 * Domain events (token.created, reactor.completed, …) recorded in the transaction of the
 * change that causes them — an outbox that webhook delivery reads. Payloads never carry
 * token data.
 */
export function createEventService(deps: { db: Database }) {
  const { db } = deps;
  return {
    async emit(tenantId: string, type: string, entityId: string | null, payload: Record<string, unknown>, tx?: Tx): Promise<void> {
      await insertEvent(db, tenantId, { id: uuidv7(), type, entity_id: entityId, payload }, tx);
    },
  };
}
