import type { Database, Tx } from '../../db/database.ts';
import { offsetPage } from '../../db/offset-page.ts';
import type { Statement } from '../../db/group-commit.ts';
import { ALL_EVENTS } from './schema.ts';

export type WebhookStatus = 'enabled' | 'disabled';

export type Webhook = {
  id: string;
  tenant_id: string;
  name: string;
  url: string;
  notify_email: string | null;
  events: string[];
  status: WebhookStatus;
  created_by: string | null;
  created_at: Date;
  modified_by: string | null;
  modified_at: Date | null;
};

/** The sealed signing secret, read only by delivery. */
export type WebhookSecret = { secret_ciphertext: Buffer; secret_key_id: string };

export type WebhookDelivery = {
  id: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  attempt: number;
  succeeded: boolean;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  created_at: Date;
};

const COLUMNS = 'id, tenant_id, name, url, notify_email, events, status, created_by, created_at, modified_by, modified_at';
const DELIVERY_COLUMNS = 'id, webhook_id, event_id, event_type, attempt, succeeded, status_code, error, duration_ms, created_at';

type Fields = Pick<Webhook, 'name' | 'url' | 'notify_email' | 'events' | 'status'>;

export async function insertWebhook(
  db: Database,
  tenantId: string,
  w: Fields & WebhookSecret & { id: string; created_by: string | null },
  tx?: Tx,
): Promise<Webhook> {
  const row = await db.one<Webhook>(
    `INSERT INTO webhooks (id, tenant_id, name, url, notify_email, events, status, secret_ciphertext, secret_key_id, created_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING ${COLUMNS}`,
    [w.id, tenantId, w.name, w.url, w.notify_email, w.events, w.status, w.secret_ciphertext, w.secret_key_id, w.created_by],
    tx,
  );
  return row!;
}

/**
 * How many webhooks the tenant has, counted under a lock on the tenant's webhook count held to
 * the end of `tx`: of concurrent creations, each counts after the one before has committed.
 */
export async function countWebhooksLocked(db: Database, tenantId: string, tx: Tx): Promise<number> {
  await db.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`webhooks/${tenantId}`], tx);
  return (await db.one<{ n: number }>(`SELECT count(*) AS n FROM webhooks WHERE tenant_id = $1`, [tenantId], tx))!.n;
}

export async function findWebhook(db: Database, tenantId: string, id: string, tx?: Tx): Promise<Webhook | undefined> {
  return db.one<Webhook>(`SELECT ${COLUMNS} FROM webhooks WHERE tenant_id = $1 AND id = $2`, [tenantId, id], tx);
}

export async function findWebhookWithSecret(db: Database, tenantId: string, id: string): Promise<(Webhook & WebhookSecret) | undefined> {
  return db.one<Webhook & WebhookSecret>(
    `SELECT ${COLUMNS}, secret_ciphertext, secret_key_id FROM webhooks WHERE tenant_id = $1 AND id = $2`,
    [tenantId, id],
  );
}

export async function listWebhooks(db: Database, tenantId: string, f: { limit: number; offset: number }): Promise<{ rows: Webhook[]; total: number }> {
  // The count and the page in one statement, so one snapshot: see src/db/offset-page.ts.
  return offsetPage<Webhook>(db, { table: 'webhooks', columns: COLUMNS, where: 'tenant_id = $1', params: [tenantId], orderBy: ['created_at', 'id'], ...f });
}

export async function updateWebhook(
  db: Database,
  tenantId: string,
  id: string,
  w: Fields & { modified_by: string },
  tx?: Tx,
): Promise<Webhook | undefined> {
  return db.one<Webhook>(
    `UPDATE webhooks SET name = $3, url = $4, notify_email = $5, events = $6, status = $7, modified_by = $8, modified_at = now()
     WHERE tenant_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
    [tenantId, id, w.name, w.url, w.notify_email, w.events, w.status, w.modified_by],
    tx,
  );
}

export async function deleteWebhook(db: Database, tenantId: string, id: string, tx?: Tx): Promise<Webhook | undefined> {
  return db.one<Webhook>(`DELETE FROM webhooks WHERE tenant_id = $1 AND id = $2 RETURNING ${COLUMNS}`, [tenantId, id], tx);
}

/**
 * One delivery job per event (rows of the CTE `eventsCte`: id, tenant_id, type, payload,
 * created_at) and enabled webhook of its tenant subscribed to its type: the outbox INSERT
 * that runs in the statement that writes the events. The payload is what a delivery sends
 * (DeliveryPayload): the webhook id and the event as it was, its time in UTC as ISO 8601.
 */
export function insertDeliveryJobsStatement(eventsCte: string, kind: string, maxAttempts: number): Statement {
  return {
    sql: `INSERT INTO jobs (id, tenant_id, kind, payload, max_attempts)
     SELECT gen_random_uuid(), e.tenant_id, $1::text, jsonb_build_object('webhook_id', w.id, 'event', jsonb_build_object(
         'id', e.id, 'type', e.type, 'created_at', to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'data', e.payload)), $2::int
     FROM ${eventsCte} e JOIN webhooks w ON w.tenant_id = e.tenant_id AND w.status = 'enabled' AND (e.type = ANY(w.events) OR $3::text = ANY(w.events))`,
    params: [kind, maxAttempts, ALL_EVENTS],
  };
}

export async function insertDelivery(
  db: Database,
  tenantId: string,
  d: Omit<WebhookDelivery, 'created_at'>,
): Promise<void> {
  await db.query(
    `INSERT INTO webhook_deliveries (id, tenant_id, webhook_id, event_id, event_type, attempt, succeeded, status_code, error, duration_ms)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
    [d.id, tenantId, d.webhook_id, d.event_id, d.event_type, d.attempt, d.succeeded, d.status_code, d.error, d.duration_ms],
  );
}

/** Newest attempt first. */
export async function listDeliveries(
  db: Database,
  tenantId: string,
  webhookId: string,
  f: { limit: number; offset: number },
): Promise<{ rows: WebhookDelivery[]; total: number }> {
  // The count and the page in one statement, so one snapshot: see src/db/offset-page.ts.
  return offsetPage<WebhookDelivery>(db, {
    table: 'webhook_deliveries', columns: DELIVERY_COLUMNS, where: 'tenant_id = $1 AND webhook_id = $2', params: [tenantId, webhookId], orderBy: ['id DESC'], ...f,
  });
}

/** Retention across tenants, in batches; conditional, so any number of processes may sweep at once. */
export async function deleteOldDeliveriesAcrossTenants(db: Database, days: number): Promise<number> {
  let deleted = 0;
  for (;;) {
    const rows = await db.query(
      `DELETE FROM webhook_deliveries WHERE id IN (
         SELECT id FROM webhook_deliveries WHERE created_at < now() - make_interval(days => $1) LIMIT 5000) RETURNING id`,
      [days],
    );
    deleted += rows.length;
    if (rows.length < 5000) return deleted;
  }
}
