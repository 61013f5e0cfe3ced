-- What a deletion takes with it, in an order a mirror can follow, and what it erases.

-- Children before their parent: the messages of a conversation are deleted before it, and a
-- contact's conversations (with their messages) and the detachment of its appointments come before
-- the contact itself. The foreign keys' own actions then find nothing left to do, and whoever
-- deletes (API, owner, plain SQL), the feed reads: message.deleted…, conversation.deleted,
-- appointment.updated…, contact.deleted. A mirror with the same foreign keys applies them in order.
CREATE OR REPLACE FUNCTION delete_conversation_messages() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
BEGIN
  DELETE FROM messages WHERE workspace_id = OLD.workspace_id AND conversation_id = OLD.id;
  RETURN OLD;
END
$$;
CREATE OR REPLACE TRIGGER conversations_children_first BEFORE DELETE ON conversations FOR EACH ROW
  EXECUTE FUNCTION delete_conversation_messages();

CREATE OR REPLACE FUNCTION delete_contact_dependents() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
BEGIN
  DELETE FROM conversations WHERE workspace_id = OLD.workspace_id AND contact_id = OLD.id;
  UPDATE appointments SET contact_id = NULL WHERE workspace_id = OLD.workspace_id AND contact_id = OLD.id;
  RETURN OLD;
END
$$;
CREATE OR REPLACE TRIGGER contacts_children_first BEFORE DELETE ON contacts FOR EACH ROW
  EXECUTE FUNCTION delete_contact_dependents();

-- Stored answers. A replayed write returns the answer stored with its Idempotency-Key (the contact
-- as it was then) for 48 hours. When the contact is deleted, that answer is erased: the record
-- stays (a retry must not create the contact again) but only says it was erased, and the replay
-- answers 404 like a GET of the contact (src/infra/idempotency-store.ts). An answer that carries several
-- contacts (POST /v2/contacts/batch/upsert) names them all in resource_ids; deleting any of them
-- erases it: nothing of a deleted contact stays readable through a replay.
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
CREATE OR REPLACE TRIGGER contacts_erase_stored_answers AFTER DELETE ON contacts FOR EACH ROW
  EXECUTE FUNCTION erase_stored_answers();
