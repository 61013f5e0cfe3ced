-- Deletions a mirror can apply in feed order; what retention deleted, per resource type; and no
-- copy of a deleted contact kept in the stored answers of idempotent requests.

-- 1. Children before their parent. A contact's deletion used to write contact.deleted first and
-- its conversations' and messages' deletions after it (the foreign keys cascade after the row's
-- own trigger): a mirror with the same foreign keys could not apply them in order. Now the
-- messages of a conversation are deleted before it, and a contact's conversations (with their
-- messages) and the detachment of its appointments come before the contact itself. The foreign
-- keys' own actions then find nothing left to do. Whoever deletes (API, owner, plain SQL), the feed
-- reads: message.deleted…, conversation.deleted, appointment.updated…, contact.deleted.
CREATE FUNCTION delete_conversation_messages() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
BEGIN
  DELETE FROM messages WHERE workspace_id = OLD.workspace_id AND conversation_id = OLD.id;
  RETURN OLD;
END
$$;
CREATE TRIGGER conversations_children_first BEFORE DELETE ON conversations FOR EACH ROW
  EXECUTE FUNCTION delete_conversation_messages();

CREATE FUNCTION delete_contact_dependents() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
BEGIN
  DELETE FROM conversations WHERE workspace_id = OLD.workspace_id AND contact_id = OLD.id;
  UPDATE appointments SET contact_id = NULL WHERE workspace_id = OLD.workspace_id AND contact_id = OLD.id;
  RETURN OLD;
END
$$;
CREATE TRIGGER contacts_children_first BEFORE DELETE ON contacts FOR EACH ROW
  EXECUTE FUNCTION delete_contact_dependents();

-- 2. What retention deleted, per resource type: a key that reads some types only is told 410 for
-- what it could have missed, never for events it was not going to see (which would tell it they
-- existed). Records from before did not say which type they were: they count for every type.
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

-- 3. Stored answers. A replayed write returns the answer stored with its Idempotency-Key — the
-- contact as it was then — for 48 hours. When the contact is deleted, that answer is erased: the
-- record stays (a retry must not create the contact again) but only says it was erased, and the
-- replay answers 404 like a GET of the contact (src/shared/idempotency.ts).
ALTER TABLE idempotency_keys ADD COLUMN resource_id uuid, ADD COLUMN erased boolean NOT NULL DEFAULT false;
UPDATE idempotency_keys SET resource_id = (response_body::jsonb -> 'data' ->> 'id')::uuid
 WHERE response_body::jsonb -> 'data' ->> 'id' ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';
-- Contacts deleted before this migration.
UPDATE idempotency_keys i SET response_body = '', erased = true
 WHERE i.resource_id IS NOT NULL
   AND NOT EXISTS (SELECT 1 FROM contacts c WHERE c.workspace_id = i.workspace_id AND c.id = i.resource_id);
CREATE INDEX idempotency_keys_resource ON idempotency_keys (workspace_id, resource_id) WHERE resource_id IS NOT NULL;

CREATE FUNCTION erase_stored_answers() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
BEGIN
  UPDATE idempotency_keys SET response_body = '', erased = true
   WHERE workspace_id = OLD.workspace_id AND resource_id = OLD.id AND NOT erased;
  RETURN NULL;
END
$$;
CREATE TRIGGER contacts_erase_stored_answers AFTER DELETE ON contacts FOR EACH ROW
  EXECUTE FUNCTION erase_stored_answers();
