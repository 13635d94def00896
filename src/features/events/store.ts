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
      events.map((e) => e.id),
      events.map((e) => e.tenant_id),
      events.map((e) => e.type),
      events.map((e) => e.entity_id),
      events.map((e) => JSON.stringify(e.payload)),
      events.map((e) => e.created_at),
    ],
  };
}
