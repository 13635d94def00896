-- 3DS sessions (src/features/threeds): one EMV 3DS transaction each, for a card token, a token
-- intent, or (deprecated) a card number tokenized on the spot. The card number is never
-- stored here: authenticate reads it again from the token or intent the session names.
-- `challenge` is the issuer ACS's state of a pending or settled challenge (its one-time code
-- among it), sealed with the vault like token data and bound to "3ds-session:<id>"; nothing
-- returns it. `authentication` is the result as the API shows it: the ARes, then the final one.
CREATE TABLE threeds_sessions (
  tenant_id            uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
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
  -- method_url (absent when the card range has none) and method_completion_indicator (Y, N, U).
  method               jsonb NOT NULL,
  authentication       jsonb,
  challenge            bytea,
  challenge_key_id     uuid REFERENCES tenant_keys (id),
  -- created → challenge (a challenge or decoupled challenge pending) → completed (a final result).
  status               text NOT NULL DEFAULT 'created' CHECK (status IN ('created', 'challenge', 'completed')),
  provider             text NOT NULL,
  expires_at           timestamptz NOT NULL,
  created_by           uuid,
  created_at           timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  modified_by          uuid,
  modified_at          timestamptz,
  PRIMARY KEY (tenant_id, id),
  CHECK (num_nonnulls(token_id, token_intent_id, pan_token_id) = 1)
);
-- The ACS pages and the notification endpoints know a session by its id alone (the EMV
-- threeDSServerTransID, a random UUID the browser carries): unique across tenants.
CREATE UNIQUE INDEX threeds_sessions_id ON threeds_sessions (id);
CREATE INDEX threeds_sessions_expiry ON threeds_sessions (expires_at);
-- One row per authenticated session, written with the authentication itself (in one
-- statement with its audit entry and event): its key is what lets a session authenticate
-- once, so of two authenticates at once the second fails whole, and is answered 409.
CREATE TABLE threeds_authentications (
  tenant_id   uuid NOT NULL,
  session_id  uuid NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, session_id),
  FOREIGN KEY (tenant_id, session_id) REFERENCES threeds_sessions (tenant_id, id) ON DELETE CASCADE
);
