-- What retention deleted, per resource type; and what a stored answer of an idempotent request
-- names, so that deleting a contact erases the answers that carry it (db/code/06_deletions.sql).

-- 1. What retention deleted, per resource type: a key that reads some types only is told 410 for
-- what it could have missed, never for events it was not going to see (which would tell it they
-- existed). A record without a type counts for every type.
ALTER TABLE events_purged DROP CONSTRAINT events_purged_pkey;
ALTER TABLE events_purged ADD COLUMN resource_type text;
INSERT INTO events_purged (workspace_id, resource_type, legacy_tx_id, legacy_seq, stamp, seq, purged_at)
SELECT p.workspace_id, t, p.legacy_tx_id, p.legacy_seq, p.stamp, p.seq, p.purged_at
  FROM events_purged p
 CROSS JOIN unnest(ARRAY['workspace', 'contact', 'pipeline_stage', 'appointment', 'catalog_item',
                         'conversation', 'message', 'automation']) AS t;
DELETE FROM events_purged WHERE resource_type IS NULL;
ALTER TABLE events_purged ALTER COLUMN resource_type SET NOT NULL;
ALTER TABLE events_purged ADD PRIMARY KEY (workspace_id, resource_type);

-- 2. Stored answers: the contact an answer carries, and whether the answer was erased.
ALTER TABLE idempotency_keys ADD COLUMN resource_id uuid, ADD COLUMN erased boolean NOT NULL DEFAULT false;
UPDATE idempotency_keys SET resource_id = (response_body::jsonb -> 'data' ->> 'id')::uuid
 WHERE response_body::jsonb -> 'data' ->> 'id' ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';
-- Answers that carry a contact already deleted.
UPDATE idempotency_keys i SET response_body = '', erased = true
 WHERE i.resource_id IS NOT NULL
   AND NOT EXISTS (SELECT 1 FROM contacts c WHERE c.workspace_id = i.workspace_id AND c.id = i.resource_id);
CREATE INDEX idempotency_keys_resource ON idempotency_keys (workspace_id, resource_id) WHERE resource_id IS NOT NULL;
