-- 3DS sessions (src/features/threeds): one EMV 3DS transaction each, for a card token, a token
-- intent, or (deprecated) a card number tokenized on the spot. The card number is never
-- stored here: authenticate reads it again from the token or intent the session names.
-- A session is written once, at creation; its authentication is a row of its own
-- (threeds_authentications), inserted by authenticate and updated by the challenge's steps.
-- Written by Coffer alone, always for an authenticated caller's tenant, so neither table has a
-- foreign key to tenants (one trigger query per row, as for the audit log: 008); no tenant is
-- ever deleted. The sweep deletes a session with its authentication.
CREATE TABLE threeds_sessions (
  tenant_id            uuid NOT NULL,
  id                   uuid NOT NULL,
  type                 text NOT NULL CHECK (type IN ('customer', 'merchant')),
  token_id             text,
  token_intent_id      uuid,
  pan_token_id         text,
  card_brand           text NOT NULL,
  directory_server_id  text NOT NULL,
  device               text CHECK (device IN ('browser', 'mobile')),
  device_info          jsonb,
  version              jsonb NOT NULL,
  -- method_url (absent when the card range has none) and, once the Method page reported or for a
  -- card without one, method_completion_indicator (Y, U).
  method               jsonb NOT NULL,
  provider             text NOT NULL,
  expires_at           timestamptz NOT NULL,
  created_by           uuid,
  created_at           timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  PRIMARY KEY (tenant_id, id),
  CHECK (num_nonnulls(token_id, token_intent_id, pan_token_id) = 1)
);
-- The ACS pages and the notification endpoints know a session by its id alone (the EMV
-- threeDSServerTransID, a random UUID the browser carries): unique across tenants.
CREATE UNIQUE INDEX threeds_sessions_id ON threeds_sessions (id);
CREATE INDEX threeds_sessions_expiry ON threeds_sessions (expires_at);

-- A session's authentication, inserted with its audit entry and event in one statement: its key
-- lets a session authenticate once, so of two authenticates at once the second fails whole,
-- and is answered 409. `authentication` is the result as the API shows it: the ARes, then the
-- final one. `challenge` is the issuer ACS's state of a pending or settled challenge (its
-- one-time code among it), sealed with the vault like token data and bound to
-- "3ds-session:<id>"; nothing returns it. `method_completion_indicator` is what the AReq carried.
CREATE TABLE threeds_authentications (
  tenant_id                   uuid NOT NULL,
  session_id                  uuid NOT NULL,
  -- challenge (a challenge or decoupled challenge pending) → completed (a final result).
  status                      text NOT NULL CHECK (status IN ('challenge', 'completed')),
  authentication              jsonb NOT NULL,
  method_completion_indicator text NOT NULL CHECK (method_completion_indicator IN ('Y', 'N', 'U')),
  challenge                   bytea,
  challenge_key_id            uuid REFERENCES tenant_keys (id),
  modified_by                 uuid,
  modified_at                 timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  PRIMARY KEY (tenant_id, session_id)
);
