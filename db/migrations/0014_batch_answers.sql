-- Stored answers of batch writes. An answer that carries several contacts (POST
-- /v2/contacts/batch/upsert) names them all in resource_ids; deleting any of them erases the
-- answer (db/code/06_deletions.sql).
ALTER TABLE idempotency_keys ADD COLUMN resource_ids uuid[];
-- Only batch answers are indexed: the single writes' inserts do not pay for it.
CREATE INDEX idempotency_keys_resources ON idempotency_keys USING gin (resource_ids)
  WHERE resource_ids IS NOT NULL;
