-- Per-tenant keys, wrapped by a key-encryption key (KEK) from the keyring.
-- purpose 'data' encrypts token data; 'index' keys the fingerprint and search HMACs.
CREATE TABLE tenant_keys (
  id          uuid PRIMARY KEY,
  tenant_id   uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  purpose     text NOT NULL CHECK (purpose IN ('data', 'index')),
  kek_id      text NOT NULL,
  wrapped     bytea NOT NULL,
  active      boolean NOT NULL DEFAULT true,
  created_at  timestamptz NOT NULL DEFAULT now(),
  rewrapped_at timestamptz
);
CREATE UNIQUE INDEX tenant_keys_one_active ON tenant_keys (tenant_id, purpose) WHERE active;

-- Token data (and its rendered mask) is stored only as AES-256-GCM ciphertext bound to
-- tenant and token id. Fingerprints and search values are keyed HMACs.
CREATE TABLE tokens (
  tenant_id              uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  id                     text NOT NULL,
  type                   text NOT NULL,
  ciphertext             bytea NOT NULL,
  data_key_id            uuid NOT NULL REFERENCES tenant_keys (id),
  containers             text[] NOT NULL,
  metadata               jsonb NOT NULL DEFAULT '{}'::jsonb,
  mask                   text,
  fingerprint            text,
  fingerprint_expression text,
  search_indexes         text[] NOT NULL DEFAULT '{}',
  search_hashes          text[] NOT NULL DEFAULT '{}',
  deduplicate_token      boolean NOT NULL DEFAULT false,
  views                  jsonb,
  expires_at             timestamptz,
  created_by             uuid,
  -- Millisecond precision, so the (created_at, id) cursor round-trips through JSON exactly.
  created_at             timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  modified_by            uuid,
  modified_at            timestamptz,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX tokens_created ON tokens (tenant_id, created_at, id);
CREATE INDEX tokens_fingerprint ON tokens (tenant_id, fingerprint) WHERE fingerprint IS NOT NULL;
CREATE INDEX tokens_search ON tokens USING gin (search_hashes);
CREATE INDEX tokens_metadata ON tokens USING gin (metadata jsonb_path_ops);
CREATE INDEX tokens_expiry ON tokens (expires_at) WHERE expires_at IS NOT NULL;

-- Domain events (token.created, …), written in the transaction of the change that
-- causes them; webhook delivery reads them from here.
CREATE TABLE events (
  id          uuid PRIMARY KEY,
  tenant_id   uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  type        text NOT NULL,
  entity_id   text,
  payload     jsonb NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_tenant ON events (tenant_id, id);
