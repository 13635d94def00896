import type { Database } from '../../db/database.ts';
import { arrayLiteral } from '../../db/array-literal.ts';
import type { Statement } from '../../db/group-commit.ts';

export type AuditEvent = {
  id: string;
  tenant_id: string;
  actor_id: string | null;
  actor_type: string | null;
  entity_type: string;
  entity_id: string | null;
  operation: string;
  message: string;
  created_at: Date;
};

/** The INSERT of many audit events (any tenants; each row carries its own), for a group commit. */
export function insertEventsStatement(events: Omit<AuditEvent, 'created_at'>[]): Statement {
  return {
    sql: `INSERT INTO audit_events (id, tenant_id, actor_id, actor_type, entity_type, entity_id, operation, message)
     SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])`,
    params: [
      arrayLiteral(events.map((e) => e.id)),
      arrayLiteral(events.map((e) => e.tenant_id)),
      arrayLiteral(events.map((e) => e.actor_id)),
      arrayLiteral(events.map((e) => e.actor_type)),
      arrayLiteral(events.map((e) => e.entity_type)),
      arrayLiteral(events.map((e) => e.entity_id)),
      arrayLiteral(events.map((e) => e.operation)),
      arrayLiteral(events.map((e) => e.message)),
    ],
  };
}

export type EventFilter = { entityType?: string; entityId?: string; startDate?: string; endDate?: string; before?: string };

/**
 * Newest first; `before` is the id the previous page ended on (ids are UUIDv7, so time-ordered).
 * Dates compare at the millisecond precision responses show, so an event's own created_at
 * used as start_date or end_date includes it.
 */
export async function listEvents(db: Database, tenantId: string, f: EventFilter, limit: number): Promise<AuditEvent[]> {
  return db.query<AuditEvent>(
    `SELECT id, tenant_id, actor_id, actor_type, entity_type, entity_id, operation, message, created_at
     FROM audit_events
     WHERE tenant_id = $1
       AND ($2::text IS NULL OR entity_type = $2)
       AND ($3::text IS NULL OR entity_id = $3)
       AND ($4::timestamptz IS NULL OR date_trunc('milliseconds', created_at) >= $4)
       AND ($5::timestamptz IS NULL OR date_trunc('milliseconds', created_at) <= $5)
       AND ($6::uuid IS NULL OR id < $6)
     ORDER BY id DESC LIMIT $7`,
    [tenantId, f.entityType ?? null, f.entityId ?? null, f.startDate ?? null, f.endDate ?? null, f.before ?? null, limit],
  );
}
