-- Proxies: forward HTTP calls to a destination with detokenization and transforms.
-- The invocation key and the configuration map (which holds the tenant's secrets for
-- the destination) rest only as AES-256-GCM ciphertext under the tenant's data key,
-- bound to the proxy id; invocations find their proxy by the key's SHA-256 hash.
CREATE TABLE proxies (
  id                 uuid PRIMARY KEY,
  tenant_id          uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  name               text NOT NULL,
  key_hash           bytea NOT NULL UNIQUE,
  secret_ciphertext  bytea NOT NULL,
  secret_key_id      uuid NOT NULL REFERENCES tenant_keys (id),
  destination_url    text NOT NULL,
  require_auth       boolean NOT NULL,
  request_transform  jsonb,
  response_transform jsonb,
  -- Deleting the application leaves the proxy without one (its expressions then fail).
  application_id     uuid REFERENCES applications (id) ON DELETE SET NULL,
  created_by         uuid,
  created_at         timestamptz NOT NULL DEFAULT now(),
  modified_by        uuid,
  modified_at        timestamptz
);
CREATE INDEX proxies_tenant ON proxies (tenant_id, created_at, id);
CREATE INDEX proxies_application ON proxies (application_id) WHERE application_id IS NOT NULL;
