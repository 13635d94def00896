-- What each created token costs PostgreSQL beyond its row and the indexes its reads use.

-- The token's two foreign keys ran two trigger queries per row, each taking a key-share lock
-- on the referenced row: about a fifth of the token INSERT's time. Tokens are written with
-- the tenant of an authenticated caller and the data key that tenant's vault loaded, and no
-- tenant is ever deleted (as for the audit log and the events, 008). What the key reference
-- did guard, that a data key still referenced is never deleted, holds for every data key:
-- a retired key still opens what it sealed. So no key row may be deleted at all, which one
-- statement-level trigger refuses at no cost to token writes.
ALTER TABLE tokens DROP CONSTRAINT tokens_tenant_id_fkey;
ALTER TABLE tokens DROP CONSTRAINT tokens_data_key_id_fkey;

CREATE FUNCTION refuse_tenant_key_removal() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'tenant keys are never deleted: the tokens they sealed would become unreadable'
    USING ERRCODE = 'restrict_violation';
END
$$;
CREATE TRIGGER tenant_keys_never_deleted BEFORE DELETE OR TRUNCATE ON tenant_keys
  FOR EACH STATEMENT EXECUTE FUNCTION refuse_tenant_key_removal();

-- A GIN index records a row with no keys too (an "empty item"), so every token paid two GIN
-- insertions, and the pending-list merges that follow them, for search values and metadata
-- most tokens do not have. Only rows that have them are indexed now; the queries that search
-- them (src/features/tokens/store.ts) state the same condition, which their own implies, and
-- use either form of the index. Rebuilding an index blocks writes to the table while it
-- runs, so it is done here only for a table of fewer than 100,000 tokens (a second or so);
-- a larger one keeps its indexes, and docs/operations.md ("Upgrades") gives the rebuild
-- without blocking writes as an operator step.
DO $$
BEGIN
  IF (SELECT count(*) FROM (SELECT 1 FROM tokens LIMIT 100000) AS sample) < 100000 THEN
    DROP INDEX tokens_search;
    CREATE INDEX tokens_search ON tokens USING gin (search_hashes) WHERE search_hashes <> '{}';
    DROP INDEX tokens_metadata;
    CREATE INDEX tokens_metadata ON tokens USING gin (metadata jsonb_path_ops) WHERE metadata <> '{}'::jsonb;
  ELSE
    RAISE NOTICE 'tokens holds 100,000 rows or more: its GIN indexes were left as they are; see docs/operations.md, "Upgrades", to make them partial without blocking writes';
  END IF;
END
$$;
