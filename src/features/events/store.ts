import type { Database, Tx } from '../../db/database.ts';

export async function insertEvent(
  db: Database,
  tenantId: string,
  e: { id: string; type: string; entity_id: string | null; payload: unknown },
  tx?: Tx,
): Promise<void> {
  await db.query(
    `INSERT INTO events (id, tenant_id, type, entity_id, payload) VALUES ($1, $2, $3, $4, $5)`,
    [e.id, tenantId, e.type, e.entity_id, JSON.stringify(e.payload)],
    tx,
  );
}
