import { createHmac, createSecretKey, randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { isForeignKeyViolation, type Database } from '../../db/database.ts';
import { uuidv4, uuidv7 } from '../../db/ids.ts';
import type { ClaimedJob } from '../../db/jobs.ts';
import type { Statement } from '../../db/group-commit.ts';
import type { Principal } from '../../access/principal.ts';
import { ApiError, FieldErrorList } from '../../http/errors.ts';
import { offsetOf, offsetPage, type Offset } from '../../http/pagination.ts';
import { OutboundError, type OutboundClient } from '../../outbound/client.ts';
import { storableUrl } from '../../outbound/storable-url.ts';
import type { Vault } from '../../vault/tenant-keys.ts';
import type { LogService } from '../logs/service.ts';
import { ALL_EVENTS, MAX_URL_LENGTH, WEBHOOK_EVENT_TYPES } from './schema.ts';
import {
  countWebhooksLocked,
  deleteOldDeliveriesAcrossTenants,
  deleteWebhook,
  insertDeliveryJobsStatement,
  findWebhook,
  findWebhookWithSecret,
  insertDelivery,
  insertWebhook,
  listDeliveries,
  listWebhooks,
  updateWebhook,
  type Webhook,
  type WebhookStatus,
} from './store.ts';

export const DELIVER_JOB = 'webhook.deliver';

/**
 * Every event of a tenant becomes one job per subscribed webhook, inserted in the statement
 * that writes the event, which a group commit shares with other tenants' writes: the cap
 * bounds what one tenant's token creation can cost everyone's.
 */
export const MAX_WEBHOOKS_PER_TENANT = 100;

export type WebhookInput = { name: string; url: string; notify_email?: string | null; events: string[]; status: WebhookStatus };
export type WebhookView = Webhook & { secret?: string };
export type WebhookService = ReturnType<typeof createWebhookService>;

/** What a delivery job carries: which endpoint, and the event as it was when it happened (no token data). */
export type DeliveryPayload = {
  webhook_id: string;
  event: { id: string; type: string; created_at: string; data: Record<string, unknown> };
};

export function createWebhookService(deps: {
  db: Database;
  vault: Vault;
  logs: LogService;
  outbound: OutboundClient;
  maxAttempts: number;
  timeoutMs: number;
}) {
  const { db, vault, logs, outbound } = deps;

  function checkUrl(url: string, errors: FieldErrorList): string {
    const checked = storableUrl(outbound, url, MAX_URL_LENGTH);
    if (checked.ok) return checked.href;
    errors.add('body.url', checked.message);
    return url;
  }

  function validate(input: WebhookInput) {
    const errors = new FieldErrorList();
    const url = checkUrl(input.url, errors);
    errors.throwIfAny();
    return { name: input.name, url, notify_email: input.notify_email ?? null, events: input.events, status: input.status };
  }

  return {
    eventTypes(): string[] {
      return [...WEBHOOK_EVENT_TYPES];
    },

    async create(principal: Principal, input: WebhookInput): Promise<WebhookView> {
      const fields = validate(input);
      const id = uuidv4();
      // Standard Webhooks: "whsec_" + base64 of 24–64 random bytes.
      const secret = `whsec_${randomBytes(32).toString('base64')}`;
      const sealed = await vault.encrypt(principal.tenantId, secretAad(id), secret);
      return db.transaction(async (tx) => {
        if ((await countWebhooksLocked(db, principal.tenantId, tx)) >= MAX_WEBHOOKS_PER_TENANT) {
          throw ApiError.unprocessable(`A tenant has at most ${MAX_WEBHOOKS_PER_TENANT} webhooks; delete one before creating another.`);
        }
        const hook = await insertWebhook(
          db,
          principal.tenantId,
          { id, ...fields, secret_ciphertext: sealed.ciphertext, secret_key_id: sealed.dataKeyId, created_by: principal.actorId },
          tx,
        );
        await logs.record(principal, { entityType: 'webhook', entityId: id, operation: 'create', message: `Webhook "${hook.name}" created` }, tx);
        return { ...hook, secret };
      });
    },

    async list(principal: Principal, q: Offset) {
      const { rows, total } = await listWebhooks(db, principal.tenantId, offsetOf(q));
      return offsetPage(rows, total, q);
    },

    async get(principal: Principal, id: string): Promise<WebhookView> {
      const hook = await findWebhook(db, principal.tenantId, id);
      if (!hook) throw ApiError.notFound('webhook');
      return hook;
    },

    async update(principal: Principal, id: string, input: WebhookInput): Promise<WebhookView> {
      const fields = validate(input);
      return db.transaction(async (tx) => {
        const hook = await updateWebhook(db, principal.tenantId, id, { ...fields, modified_by: principal.actorId }, tx);
        if (!hook) throw ApiError.notFound('webhook');
        await logs.record(principal, { entityType: 'webhook', entityId: id, operation: 'update', message: `Webhook "${hook.name}" updated` }, tx);
        return hook;
      });
    },

    async remove(principal: Principal, id: string): Promise<void> {
      await db.transaction(async (tx) => {
        const gone = await deleteWebhook(db, principal.tenantId, id, tx);
        if (!gone) throw ApiError.notFound('webhook');
        await logs.record(principal, { entityType: 'webhook', entityId: id, operation: 'delete', message: `Webhook "${gone.name}" deleted` }, tx);
      });
    },

    async listDeliveries(principal: Principal, id: string, q: Offset) {
      if (!(await findWebhook(db, principal.tenantId, id))) throw ApiError.notFound('webhook');
      const { rows, total } = await listDeliveries(db, principal.tenantId, id, offsetOf(q));
      return offsetPage(rows, total, q);
    },

    /** The events subscriber: one delivery job per event and subscribed endpoint, in the statement that writes the events. */
    deliveriesFor(eventsCte: string): Statement {
      return insertDeliveryJobsStatement(eventsCte, DELIVER_JOB, deps.maxAttempts);
    },

    /**
     * The `webhook.deliver` job: one signed POST, recorded as an attempt. Throwing makes the
     * job runner retry on WEBHOOK_RETRY_SCHEDULE and finally dead-letter it. An endpoint deleted, disabled
     * or unsubscribed since the event gets nothing.
     */
    async deliver(job: ClaimedJob<DeliveryPayload>): Promise<void> {
      const tenantId = job.tenantId!;
      const { webhook_id, event } = job.payload;
      const hook = await findWebhookWithSecret(db, tenantId, webhook_id);
      if (!hook || hook.status !== 'enabled' || !subscribes(hook.events, event.type)) return;
      const secret = (await vault.decrypt(tenantId, secretAad(hook.id), hook.secret_ciphertext, hook.secret_key_id)) as string;
      const body = JSON.stringify({ id: event.id, type: event.type, tenant_id: tenantId, created_at: event.created_at, data: event.data });
      const timestamp = Math.floor(Date.now() / 1000);
      const headers = {
        'content-type': 'application/json',
        'user-agent': 'Coffer-Webhooks/1',
        'webhook-id': event.id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signWebhook(secret, event.id, timestamp, body),
      };
      const started = performance.now();
      let status: number | null = null;
      let error: string | null = null;
      try {
        // Streamed, so only the status is awaited: what the endpoint says beyond it is read (a little) and dropped.
        const res = await outbound.stream({ url: hook.url, method: 'POST', headers, body, timeoutMs: deps.timeoutMs, tenantId });
        status = res.status;
        await discard(res.body, 64 * 1024);
      } catch (err) {
        error = err instanceof OutboundError ? err.code : 'request_failed';
      }
      const succeeded = status !== null && status >= 200 && status < 300;
      try {
        await insertDelivery(db, tenantId, {
          id: uuidv7(),
          webhook_id,
          event_id: event.id,
          event_type: event.type,
          attempt: job.attempt,
          succeeded,
          status_code: status,
          error,
          duration_ms: Math.round(performance.now() - started),
        });
      } catch (err) {
        // The webhook was deleted while we were calling it: nothing left to retry for.
        if (isForeignKeyViolation(err)) return;
        throw err;
      }
      if (!succeeded) throw new Error(error ? `delivery failed: ${error}` : `endpoint answered HTTP ${status}`);
    },

    sweepDeliveries(retentionDays: number): Promise<number> {
      return deleteOldDeliveriesAcrossTenants(db, retentionDays);
    },
  };
}

/** Reads and drops a response body up to `limit` bytes (keeping the connection reusable), then gives up on it. */
async function discard(body: Readable, limit: number): Promise<void> {
  let seen = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      seen += chunk.length;
      if (seen > limit) break;
    }
  } catch {
    // The status has arrived; a body that fails or times out changes nothing.
  } finally {
    body.destroy();
  }
}

function subscribes(events: string[], type: string): boolean {
  return events.includes(type) || events.includes(ALL_EVENTS);
}

/** Binds the sealed secret to its webhook; token ids cannot contain ':', so no token's AAD matches. */
function secretAad(webhookId: string): string {
  return `webhook:${webhookId}`;
}

/**
 * The Standard Webhooks signature: `v1,` + base64 HMAC-SHA256 of `{id}.{timestamp}.{body}`
 * under the secret's bytes (the base64 after `whsec_`).
 */
export function signWebhook(secret: string, id: string, timestamp: number, body: string): string {
  const key = createSecretKey(Buffer.from(secret.slice('whsec_'.length), 'base64'));
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}
