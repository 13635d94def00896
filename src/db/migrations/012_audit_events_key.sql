-- The audit log is the table that grows fastest: every read of token data writes an entry.
-- Its primary key on id alone and its index by (tenant_id, id DESC) become one primary key on
-- (tenant_id, id), which serves both: ids stay unique (UUIDv7), and a tenant's log, newest
-- first, is that key read backwards. Each entry then costs two index entries instead of
-- three, ~12% less PostgreSQL CPU per entry (20.2 against 17.8 µs in batches of 26), and the
-- indexes take ~30% less space. The DESC index also took new ids at its left edge, where
-- B-tree page splits leave both halves half empty: it was nearly twice the size of an
-- ascending one.
--
-- Rebuilding the key blocks writes to the table while it builds, so it is done here only for
-- a log of fewer than 100,000 entries (a second or so). A larger one keeps its indexes; the
-- log reads the same through either. docs/operations.md ("Upgrades") gives the change
-- without blocking writes as an operator step.
DO $$
BEGIN
  IF (SELECT count(*) FROM (SELECT 1 FROM audit_events LIMIT 100000) AS sample) < 100000 THEN
    ALTER TABLE audit_events DROP CONSTRAINT audit_events_pkey;
    ALTER TABLE audit_events ADD CONSTRAINT audit_events_pkey PRIMARY KEY (tenant_id, id);
    DROP INDEX audit_events_tenant;
  ELSE
    RAISE NOTICE 'audit_events holds 100,000 rows or more: its indexes were left as they are; see docs/operations.md, "Upgrades", to key it by (tenant_id, id) without blocking writes';
  END IF;
END
$$;
