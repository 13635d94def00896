-- How many values each data key has sealed (counted by the processes, added in batches):
-- a tenant's data key is replaced before its random 96-bit GCM nonces near their budget.
ALTER TABLE tenant_keys ADD COLUMN sealed bigint NOT NULL DEFAULT 0;
