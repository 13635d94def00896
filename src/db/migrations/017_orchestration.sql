-- Orchestration (src/features/connections, src/features/transactions): processor accounts,
-- the payments made through them and their refunds. Written by Coffer alone, always for an
-- authenticated caller's tenant, so no table has a foreign key to tenants (as 008, 016).

-- A configured processor account. `credentials` are sealed with the tenant's key like token
-- data (bound to "connection:<id>") and never returned. A deleted connection keeps its row:
-- its transactions still capture, void and refund through it; it takes no new ones.
CREATE TABLE connections (
  tenant_id           uuid NOT NULL,
  id                  uuid NOT NULL,
  name                text NOT NULL,
  processor           text NOT NULL,
  settings            jsonb NOT NULL DEFAULT '{}'::jsonb,
  credentials         bytea NOT NULL,
  credentials_key_id  uuid NOT NULL REFERENCES tenant_keys (id),
  created_by          uuid,
  created_at          timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  modified_by         uuid,
  modified_at         timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  deleted_at          timestamptz,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX connections_listed ON connections (tenant_id, created_at, id) WHERE deleted_at IS NULL;

-- A payment. Its status and amounts follow src/processors/transitions.ts. `pending` is the
-- outbox: the processor call in flight ({operation, key, amount}), written before the call is
-- made and cleared with its outcome; a row left pending (a crash between call and commit) is
-- resumed by the orchestration sweep with the same idempotency key, so it never charges twice.
CREATE TABLE transactions (
  tenant_id                       uuid NOT NULL,
  id                              uuid NOT NULL,
  connection_id                   uuid NOT NULL,
  processor                       text NOT NULL,
  status                          text NOT NULL,
  intent                          text NOT NULL CHECK (intent IN ('authorize', 'capture')),
  amount                          bigint NOT NULL CHECK (amount > 0),
  currency                        text NOT NULL,
  authorized_amount               bigint NOT NULL DEFAULT 0,
  captured_amount                 bigint NOT NULL DEFAULT 0,
  refunded_amount                 bigint NOT NULL DEFAULT 0 CHECK (refunded_amount >= 0 AND refunded_amount <= captured_amount),
  country                         text,
  external_identifier             text,
  metadata                        jsonb,
  payment_source                  text NOT NULL,
  merchant_initiated              boolean NOT NULL,
  is_subsequent_payment           boolean NOT NULL,
  previous_scheme_transaction_id  text,
  -- {type: token|token_intent, id, scheme, last4, expiration_date, approval_url?}
  payment_method                  jsonb NOT NULL,
  three_d_session_id              uuid,
  three_d_secure                  jsonb,
  error_code                      text,
  auth_response_code              text,
  cvv_response_code               text,
  avs_response_code               text,
  raw_response_code               text,
  raw_response_description        text,
  connection_transaction_id       text,
  scheme_transaction_id           text,
  authorized_at                   timestamptz,
  captured_at                     timestamptz,
  voided_at                       timestamptz,
  approval_expires_at             timestamptz,
  pending                         jsonb,
  pending_since                   timestamptz,
  created_by                      uuid,
  created_at                      timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  updated_at                      timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  PRIMARY KEY (tenant_id, id)
);
-- The list pages newest first.
CREATE INDEX transactions_listed ON transactions (tenant_id, created_at DESC, id DESC);
CREATE INDEX transactions_reconciliation ON transactions (tenant_id, external_identifier) WHERE external_identifier IS NOT NULL;
-- What the sweep resumes: calls whose outcome was never recorded, and approvals that ran out.
CREATE INDEX transactions_pending ON transactions (pending_since) WHERE pending IS NOT NULL;
CREATE INDEX transactions_awaiting_approval ON transactions (approval_expires_at) WHERE status = 'buyer_approval_pending';
-- The approval page knows a transaction by its id alone (and the secret in its URL): unique across tenants.
CREATE UNIQUE INDEX transactions_approvals ON transactions (id) WHERE status = 'buyer_approval_pending';

CREATE TABLE refunds (
  tenant_id             uuid NOT NULL,
  id                    uuid NOT NULL,
  transaction_id        uuid NOT NULL,
  status                text NOT NULL CHECK (status IN ('processing', 'succeeded', 'declined', 'failed', 'voided')),
  currency              text NOT NULL,
  amount                bigint NOT NULL CHECK (amount > 0),
  reason                text,
  connection_refund_id  text,
  error_code            text,
  raw_response_code     text,
  raw_response_description text,
  -- The refund call in flight, as for transactions.
  pending               boolean NOT NULL DEFAULT true,
  pending_since         timestamptz,
  created_by            uuid,
  created_at            timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  updated_at            timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX refunds_of_transaction ON refunds (tenant_id, transaction_id, created_at, id);
CREATE INDEX refunds_pending ON refunds (pending_since) WHERE pending;
