import type { Database } from '../../db/database.ts';
import { arrayLiteral } from '../../db/array-literal.ts';
import type { Statement } from '../../db/group-commit.ts';

/**
 * The INSERT of many events (any tenants; each row carries its own), for a group commit. It
 * returns what a follow-up statement needs: the events as stored.
 */
export function insertEventsStatement(
  events: { id: string; tenant_id: string; type: string; entity_id: string | null; payload: unknown; created_at: Date }[],
): Statement {
  return {
    sql: `INSERT INTO events (id, tenant_id, type, entity_id, payload, created_at)
     SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::jsonb[], $6::timestamptz[])
     RETURNING id, tenant_id, type, payload, created_at`,
    params: [
      arrayLiteral(events.map((e) => e.id)),
      arrayLiteral(events.map((e) => e.tenant_id)),
      arrayLiteral(events.map((e) => e.type)),
      arrayLiteral(events.map((e) => e.entity_id)),
      arrayLiteral(events.map((e) => JSON.stringify(e.payload))),
      arrayLiteral(events.map((e) => e.created_at.toISOString())),
    ],
  };
}

/**
 * Deletes the events (any tenants) whose id sorts below `boundaryId`: event ids are UUIDv7, so
 * that is every event made before its instant, found through the primary key. In batches, so
 * no one statement holds a large table for long.
 */
export async function deleteEventsBefore(db: Database, boundaryId: string): Promise<number> {
  let deleted = 0;
  for (;;) {
    const rows = await db.query(`DELETE FROM events WHERE id IN (SELECT id FROM events WHERE id < $1 LIMIT 5000) RETURNING id`, [boundaryId]);
    deleted += rows.length;
    if (rows.length < 5000) return deleted;
  }
}
