-- Token intents: card, bank or network-token data held for a short while (a decrypted Google
-- Pay token, say) until it becomes a token, is used for 3DS or a payment, or expires. Their
-- data is encrypted like token data (bound to "token-intent:<id>", so an intent's ciphertext
-- cannot pass for a token's); what the API shows of them is in `details`, never the data.
-- A converted intent is deleted in the transaction that creates its token, so it converts once.
CREATE TABLE token_intents (
  tenant_id    uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  id           uuid NOT NULL,
  type         text NOT NULL,
  ciphertext   bytea NOT NULL,
  data_key_id  uuid NOT NULL REFERENCES tenant_keys (id),
  details      jsonb NOT NULL,
  fingerprint  text,
  extras       jsonb NOT NULL DEFAULT '{}'::jsonb,
  expires_at   timestamptz NOT NULL,
  created_by   uuid,
  created_at   timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX token_intents_expiry ON token_intents (expires_at);
