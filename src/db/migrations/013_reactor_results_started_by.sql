-- A run's result is read only by the application or session that started it (the actor id of
-- its key): anyone else with token:use learns request ids from the audit log and from
-- reactor.* events, and must not read what the run answered.
--
-- A result kept before this column has no starter, and is read by no one from now on, unless
-- its run's job still names the caller: asynchronous runs' jobs are kept as long as results
-- are (JOB_RETENTION_DAYS), so theirs get it back. A synchronous run's caller had the answer in
-- its reply; the copy kept for webhook subscribers is swept with the other results.
ALTER TABLE reactor_results ADD COLUMN started_by uuid;

UPDATE reactor_results AS r SET started_by = (j.payload -> 'caller' ->> 'actorId')::uuid
FROM jobs AS j
WHERE j.kind = 'reactor.run'
  AND j.tenant_id = r.tenant_id
  AND j.payload ->> 'request_id' = r.id::text
  AND j.payload -> 'caller' ->> 'actorId' ~ '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
