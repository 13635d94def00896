-- A stored reply that shows token data the request did not send (a merge patch's result, the
-- token a deduplicating create found) records which tokens, and under which access, sealed
-- like the reply itself: a replay shows them again only while the caller may still see them
-- so (src/http/idempotency.ts). NULL for every other reply, and for those stored before.
ALTER TABLE idempotency_keys ADD COLUMN response_shows text;
