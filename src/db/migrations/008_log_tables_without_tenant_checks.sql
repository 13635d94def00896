-- The audit log and the events are append-only records written by Coffer itself, always with
-- the tenant of an authenticated caller (or of the row that caused them); no tenant is ever
-- deleted. Their foreign keys to tenants checked nothing Coffer does not already know, one
-- trigger query per row: about a fifth of PostgreSQL's work for each token created.
-- Deleting a tenant, should it ever be offered, must delete these rows itself.
ALTER TABLE audit_events DROP CONSTRAINT audit_events_tenant_id_fkey;
ALTER TABLE events DROP CONSTRAINT events_tenant_id_fkey;
-- Reactor results are kept a few days and written once per run, the same way.
ALTER TABLE reactor_results DROP CONSTRAINT reactor_results_tenant_id_fkey;
