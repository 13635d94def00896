-- Reactors: customer code run in the sandbox. `version` changes on every update so warm
-- isolates compiled from older code are never reused.
CREATE TABLE reactors (
  id             uuid PRIMARY KEY,
  tenant_id      uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  name           text NOT NULL,
  code           text NOT NULL,
  -- Configuration often holds credentials: stored only encrypted, like token data.
  configuration_ciphertext bytea NOT NULL,
  configuration_key_id     uuid NOT NULL,
  application_id uuid REFERENCES applications (id) ON DELETE SET NULL,
  version        integer NOT NULL DEFAULT 1,
  created_by     uuid,
  created_at     timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  modified_by    uuid,
  modified_at    timestamptz
);
CREATE INDEX reactors_tenant ON reactors (tenant_id, created_at, id);

-- Results of asynchronous runs. The outcome (which may hold raw data) is stored only
-- encrypted under the tenant's data key.
CREATE TABLE reactor_results (
  id           uuid PRIMARY KEY,
  tenant_id    uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  reactor_id   uuid NOT NULL,
  status       text NOT NULL CHECK (status IN ('pending', 'completed', 'failed')),
  ciphertext   bytea,
  data_key_id  uuid,
  created_at   timestamptz NOT NULL DEFAULT now(),
  completed_at timestamptz
);
CREATE INDEX reactor_results_tenant ON reactor_results (tenant_id, reactor_id, id);
CREATE INDEX reactor_results_age ON reactor_results (created_at);
