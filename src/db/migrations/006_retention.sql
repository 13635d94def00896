-- The retention sweep deletes delivery records by age (JOB_DEAD_RETENTION_DAYS): without an
-- index on it, every sweep read the whole table. (Events are swept through their primary
-- key, whose UUIDv7 ids sort by time, so their inserts pay for no index of their own.)
CREATE INDEX webhook_deliveries_age ON webhook_deliveries (created_at);

-- Every read of a reactor result is by its request id (the primary key), with the tenant and
-- reactor checked on the row: the index by tenant only cost each run's write a second entry.
DROP INDEX reactor_results_tenant;
