-- Tenants, their users and members, applications with their keys, sessions,
-- idempotency records and the audit log.

CREATE TABLE tenants (
  id          uuid PRIMARY KEY,
  name        text NOT NULL,
  owner_id    uuid,
  settings    jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at  timestamptz NOT NULL DEFAULT now(),
  modified_at timestamptz
);

CREATE TABLE users (
  id          uuid PRIMARY KEY,
  email       text,
  first_name  text,
  last_name   text,
  picture     text,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_email_key ON users (lower(email)) WHERE email IS NOT NULL;

CREATE TABLE tenant_members (
  id          uuid PRIMARY KEY,
  tenant_id   uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  user_id     uuid NOT NULL REFERENCES users (id),
  role        text NOT NULL CHECK (role IN ('OWNER', 'ADMIN', 'READ_ONLY')),
  created_by  uuid,
  created_at  timestamptz NOT NULL DEFAULT now(),
  modified_by uuid,
  modified_at timestamptz,
  UNIQUE (tenant_id, user_id)
);

CREATE TABLE applications (
  id          uuid PRIMARY KEY,
  tenant_id   uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  name        text NOT NULL,
  type        text NOT NULL CHECK (type IN ('private', 'public', 'management')),
  permissions text[] NOT NULL DEFAULT '{}',
  rules       jsonb NOT NULL DEFAULT '[]'::jsonb,
  expires_at  timestamptz,
  created_by  uuid,
  created_at  timestamptz NOT NULL DEFAULT now(),
  modified_by uuid,
  modified_at timestamptz
);
CREATE INDEX applications_tenant_created ON applications (tenant_id, created_at, id);
CREATE INDEX applications_expiry ON applications (expires_at) WHERE expires_at IS NOT NULL;

-- Keys are stored only as SHA-256 hashes of their value.
CREATE TABLE application_keys (
  id             uuid PRIMARY KEY,
  tenant_id      uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  application_id uuid NOT NULL REFERENCES applications (id) ON DELETE CASCADE,
  key_hash       bytea NOT NULL UNIQUE,
  created_by     uuid,
  created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX application_keys_app ON application_keys (tenant_id, application_id, created_at, id);

-- A session key has no access until a private application authorizes it with its nonce.
CREATE TABLE sessions (
  id                    uuid PRIMARY KEY,
  tenant_id             uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  public_application_id uuid NOT NULL REFERENCES applications (id) ON DELETE CASCADE,
  key_hash              bytea NOT NULL UNIQUE,
  nonce_hash            bytea UNIQUE,
  permissions           text[] NOT NULL DEFAULT '{}',
  rules                 jsonb NOT NULL DEFAULT '[]'::jsonb,
  authorized_by         uuid,
  authorized_at         timestamptz,
  expires_at            timestamptz NOT NULL,
  created_at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sessions_expiry ON sessions (expires_at);

-- In-flight requests hold a transaction-level advisory lock on their key; a row here
-- is written only for a request that succeeded, in the same transaction as its effects.
CREATE TABLE idempotency_keys (
  tenant_id       uuid NOT NULL,
  actor_id        uuid NOT NULL,
  key             text NOT NULL,
  request_hash    bytea NOT NULL,
  response_status int NOT NULL,
  response_type   text,
  response_body   text NOT NULL,
  expires_at      timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, actor_id, key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);

-- Ids are UUIDv7, so ordering by id is ordering by time and serves the cursor.
CREATE TABLE audit_events (
  id          uuid PRIMARY KEY,
  tenant_id   uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  actor_id    uuid,
  actor_type  text,
  entity_type text NOT NULL,
  entity_id   text,
  operation   text NOT NULL,
  message     text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audit_events_tenant ON audit_events (tenant_id, id DESC);
CREATE INDEX audit_events_entity ON audit_events (tenant_id, entity_type, entity_id, id DESC);
