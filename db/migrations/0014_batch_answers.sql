-- Stored answers of batch writes. An answer that carries several contacts (POST
-- /v2/contacts/batch/upsert) names them all in resource_ids; deleting any of them erases the
-- answer, as deleting the one contact of a single write does (db/migrations/0010): nothing of a
-- deleted contact stays readable through a replay.
ALTER TABLE idempotency_keys ADD COLUMN resource_ids uuid[];
-- Only batch answers are indexed: the single writes' inserts do not pay for it.
CREATE INDEX idempotency_keys_resources ON idempotency_keys USING gin (resource_ids)
  WHERE resource_ids IS NOT NULL;

CREATE OR REPLACE FUNCTION erase_stored_answers() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
BEGIN
  UPDATE idempotency_keys SET response_body = '', erased = true
   WHERE workspace_id = OLD.workspace_id AND resource_id = OLD.id AND NOT erased;
  UPDATE idempotency_keys SET response_body = '', erased = true
   WHERE resource_ids @> ARRAY[OLD.id] AND resource_ids IS NOT NULL
     AND workspace_id = OLD.workspace_id AND NOT erased;
  RETURN NULL;
END
$$;
