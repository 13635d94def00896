-- Background jobs: inserted in the transaction of the change that causes them (an
-- outbox), claimed by workers with FOR UPDATE SKIP LOCKED under a lease, retried with
-- backoff and finally dead-lettered. Payloads carry ids and event snapshots, never token data.
CREATE TABLE jobs (
  id           uuid PRIMARY KEY,
  -- NULL for work that belongs to no one tenant.
  tenant_id    uuid REFERENCES tenants (id) ON DELETE CASCADE,
  kind         text NOT NULL,
  payload      jsonb NOT NULL DEFAULT '{}'::jsonb,
  status       text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'done', 'dead')),
  attempts     int NOT NULL DEFAULT 0,
  max_attempts int NOT NULL CHECK (max_attempts >= 1),
  run_at       timestamptz NOT NULL DEFAULT now(),
  -- While running: the worker's lease. A worker that dies lets it lapse and another retries.
  locked_until timestamptz,
  locked_by    text,
  last_error   text,
  created_at   timestamptz NOT NULL DEFAULT now(),
  finished_at  timestamptz
);
CREATE INDEX jobs_due ON jobs (run_at) WHERE status = 'pending';
CREATE INDEX jobs_leased ON jobs (locked_until) WHERE status = 'running';
CREATE INDEX jobs_finished ON jobs (finished_at) WHERE status IN ('done', 'dead');
CREATE INDEX jobs_tenant ON jobs (tenant_id, created_at);

-- Webhook endpoints. The signing secret rests only as AES-256-GCM ciphertext under the
-- tenant's data key, bound to the webhook id.
CREATE TABLE webhooks (
  id                uuid PRIMARY KEY,
  tenant_id         uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  name              text NOT NULL,
  url               text NOT NULL,
  notify_email      text,
  events            text[] NOT NULL,
  status            text NOT NULL CHECK (status IN ('enabled', 'disabled')),
  secret_ciphertext bytea NOT NULL,
  secret_key_id     uuid NOT NULL REFERENCES tenant_keys (id),
  created_by        uuid,
  created_at        timestamptz NOT NULL DEFAULT now(),
  modified_by       uuid,
  modified_at       timestamptz
);
CREATE INDEX webhooks_tenant ON webhooks (tenant_id, created_at, id);
-- Every domain event looks up its subscribers, in the transaction of the change.
CREATE INDEX webhooks_enabled ON webhooks (tenant_id) WHERE status = 'enabled';

-- One row per delivery attempt, successful or not. Ids are UUIDv7: newest first by id.
CREATE TABLE webhook_deliveries (
  id          uuid PRIMARY KEY,
  tenant_id   uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  webhook_id  uuid NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  event_id    uuid NOT NULL,
  event_type  text NOT NULL,
  attempt     int NOT NULL,
  succeeded   boolean NOT NULL,
  status_code int,
  error       text,
  duration_ms int NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (tenant_id, webhook_id, id DESC);
CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at);
