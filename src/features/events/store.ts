import type { Database, Tx } from '../../db/database.ts';

/** Many events in one statement (any tenants; each row carries its own). */
export async function insertEvents(
  db: Database,
  events: { id: string; tenant_id: string; type: string; entity_id: string | null; payload: unknown }[],
  tx: Tx,
): Promise<void> {
  await db.query(
    `INSERT INTO events (id, tenant_id, type, entity_id, payload)
     SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::jsonb[])`,
    [
      events.map((e) => e.id),
      events.map((e) => e.tenant_id),
      events.map((e) => e.type),
      events.map((e) => e.entity_id),
      events.map((e) => JSON.stringify(e.payload)),
    ],
    tx,
  );
}
