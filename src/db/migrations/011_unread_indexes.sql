-- Indexes no query reads, which every write to their tables paid for.

-- Events are read only by the retention sweep, through the primary key (UUIDv7 ids sort by
-- time), and by the statement that writes them (webhook deliveries follow from the inserted
-- rows). The index by tenant cost every created token's event an entry: ~3 µs of PostgreSQL
-- CPU of the ~17 µs an event row takes, and an index bigger than the primary key.
DROP INDEX events_tenant;

-- Jobs are claimed by due time, found by id and swept by status and age: nothing lists them
-- by tenant. Every enqueue and every status change (claim, finish, retry) wrote an entry.
DROP INDEX jobs_tenant;

-- Migration 006 indexed webhook deliveries by age for the retention sweep, which migration
-- 003 had already done under another name: one of the two goes.
DROP INDEX webhook_deliveries_age;
