-- The events feed: every committed change to a public resource becomes one row of `events`,
-- written by a trigger in the same transaction as the change, whoever the writer is (the API, the
-- owner CLI, the product's own jobs, plain SQL).
--
-- Positions. An event is placed by the stamp its transaction took from the workspace's sync clock
-- (03_sync_clock.sql), in milliseconds, with the sequence events_seq ordering the events of one
-- stamp. The clock is held from the first stamp until commit, so, per workspace:
--   * a transaction that has not committed yet will sort after every event a reader can see;
--   * an event is visible as soon as its transaction commits, and the feed, read in (stamp, seq)
--     order, never skips one: what a reader has not seen yet always comes after what it has.
-- Every change that writes an event therefore takes the clock: deletions and workspace updates
-- too, not only the stamped inserts and updates. The API shows positions encrypted (event ids), so
-- even the stamps stay inside (src/modules/events/event-ids.ts).
--
-- Erasure. When a resource is deleted, its earlier events keep their place, type and ids, and their
-- data becomes the deletion's tombstone ({id}, and for a contact {id, external_id}): a follower
-- still applies them in order, and nothing of the deleted record stays readable.

-- ------------------------------------------------------------------ the text of an event

-- events.feed_json: the event as GET /v2/events lists it, less its id, in the order of the schema
-- Event. GET splices this text into the page after the event's id, which is encrypted per
-- installation at read time; an event is read far more often than it is written (by every
-- integration that follows the feed, again on every resync), so its JSON is built here, once.
-- Written on every insert and every update, whatever the writer put in it: the text cannot say
-- more than the data it is made from, and an erasure of `data` rewrites it.
CREATE OR REPLACE FUNCTION write_feed_json() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
BEGIN
  NEW.feed_json := '{"type":' || to_json(NEW.type)::text || ',"resource_type":' || to_json(NEW.resource_type)::text ||
                   ',"resource_id":' || to_json(NEW.resource_id)::text ||
                   ',"occurred_at":' || to_json(api_time(NEW.occurred_at))::text ||
                   ',"request_id":' || coalesce(to_json(NEW.request_id)::text, 'null') ||
                   ',"data":' || api_public_json(NEW.resource_type, NEW.data) || '}';
  RETURN NEW;
END
$$;

CREATE OR REPLACE TRIGGER events_feed_json BEFORE INSERT OR UPDATE ON events FOR EACH ROW
  EXECUTE FUNCTION write_feed_json();
-- Also in sessions with session_replication_role = replica (a bulk load, a logical replica's apply),
-- which skip ordinary triggers: no writer can leave an event without its text.
ALTER TABLE events ENABLE ALWAYS TRIGGER events_feed_json;

-- ------------------------------------------------------------------ writing events

-- Called by the row triggers of every resource below. The request id is set (transaction-local) by
-- the API, so changes made through it can be traced; other writers leave it empty.
CREATE OR REPLACE FUNCTION emit_event(ws uuid, kind text, op text, resource text, representation jsonb) RETURNS void
  LANGUAGE plpgsql
  AS $$
DECLARE
  content jsonb := coalesce(representation, jsonb_build_object('id', resource));
BEGIN
  -- A workspace being deleted takes its resources and its events with it: nothing to record.
  IF NOT EXISTS (SELECT 1 FROM workspaces w WHERE w.id = ws) THEN
    RETURN;
  END IF;
  IF op = 'DELETE' THEN
    -- Erasure: the resource's earlier events now say no more than its tombstone.
    UPDATE events e SET data = content
     WHERE e.workspace_id = ws AND e.resource_type = kind AND e.resource_id = resource AND e.data <> content;
  END IF;
  INSERT INTO events (workspace_id, stamp, type, resource_type, resource_id, request_id, data)
  VALUES (ws, stamp_position(sync_stamp(ws)),
          kind || CASE op WHEN 'INSERT' THEN '.created' WHEN 'UPDATE' THEN '.updated' ELSE '.deleted' END,
          kind, resource, nullif(current_setting('app.request_id', true), ''), content);
END
$$;

CREATE OR REPLACE FUNCTION workspaces_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN RETURN NULL; END IF; -- events of a deleted workspace go with it
  PERFORM emit_event(NEW.id, 'workspace', TG_OP, NEW.id::text, api_workspace_json(NEW));
  RETURN NULL;
END $$;

-- One trigger function for every workspace-owned table; its argument names the resource type.
-- A deletion writes the tombstone: {id}, and for a contact its external_id (public data) beside it,
-- so a CRM that keys its records by external id applies the deletion without keeping a map of our
-- ids. Otherwise the event carries the row's public representation, by a direct call of its
-- api_<kind>_json() function (generated from the resource's schema): PL/pgSQL plans a branch the first time it
-- runs, for the table the trigger fires on, so each branch is only ever planned for its own row
-- type, once per session, where EXECUTE format(...) would plan a statement anew for every row. A
-- kind without a branch (none today) still goes through EXECUTE.
CREATE OR REPLACE FUNCTION resource_changed() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
DECLARE
  kind text := TG_ARGV[0];
  representation jsonb;
BEGIN
  IF TG_OP = 'DELETE' THEN
    representation := jsonb_build_object('id', OLD.id);
    IF kind = 'contact' THEN
      representation := representation || jsonb_build_object('external_id', to_jsonb(OLD) -> 'external_id');
    END IF;
    PERFORM emit_event(OLD.workspace_id, kind, TG_OP, OLD.id::text, representation);
    RETURN NULL;
  END IF;
  IF kind = 'contact' THEN
    representation := api_contact_json(NEW);
  ELSIF kind = 'appointment' THEN
    representation := api_appointment_json(NEW);
  ELSIF kind = 'pipeline_stage' THEN
    representation := api_pipeline_stage_json(NEW);
  ELSIF kind = 'catalog_item' THEN
    representation := api_catalog_item_json(NEW);
  ELSIF kind = 'conversation' THEN
    representation := api_conversation_json(NEW);
  ELSIF kind = 'message' THEN
    representation := api_message_json(NEW);
  ELSIF kind = 'automation' THEN
    representation := api_automation_json(NEW);
  ELSE
    EXECUTE format('SELECT api_%s_json($1)', kind) INTO representation USING NEW;
  END IF;
  PERFORM emit_event(NEW.workspace_id, kind, TG_OP, NEW.id::text, representation);
  RETURN NULL;
END
$$;

-- Inserts and deletes always count; an update counts when it moved updated_at, i.e. when a public
-- property changed (03_sync_clock.sql).
CREATE OR REPLACE TRIGGER workspaces_events AFTER INSERT ON workspaces FOR EACH ROW
  EXECUTE FUNCTION workspaces_changed();
CREATE OR REPLACE TRIGGER workspaces_events_update AFTER UPDATE ON workspaces FOR EACH ROW
  WHEN (OLD.updated_at IS DISTINCT FROM NEW.updated_at) EXECUTE FUNCTION workspaces_changed();

CREATE OR REPLACE TRIGGER contacts_events AFTER INSERT OR DELETE ON contacts FOR EACH ROW
  EXECUTE FUNCTION resource_changed('contact');
CREATE OR REPLACE TRIGGER contacts_events_update AFTER UPDATE ON contacts FOR EACH ROW
  WHEN (OLD.updated_at IS DISTINCT FROM NEW.updated_at) EXECUTE FUNCTION resource_changed('contact');

CREATE OR REPLACE TRIGGER appointments_events AFTER INSERT OR DELETE ON appointments FOR EACH ROW
  EXECUTE FUNCTION resource_changed('appointment');
CREATE OR REPLACE TRIGGER appointments_events_update AFTER UPDATE ON appointments FOR EACH ROW
  WHEN (OLD.updated_at IS DISTINCT FROM NEW.updated_at) EXECUTE FUNCTION resource_changed('appointment');

CREATE OR REPLACE TRIGGER pipeline_stages_events AFTER INSERT OR DELETE ON pipeline_stages FOR EACH ROW
  EXECUTE FUNCTION resource_changed('pipeline_stage');
CREATE OR REPLACE TRIGGER pipeline_stages_events_update AFTER UPDATE ON pipeline_stages FOR EACH ROW
  WHEN (OLD.updated_at IS DISTINCT FROM NEW.updated_at) EXECUTE FUNCTION resource_changed('pipeline_stage');

CREATE OR REPLACE TRIGGER catalog_items_events AFTER INSERT OR DELETE ON catalog_items FOR EACH ROW
  EXECUTE FUNCTION resource_changed('catalog_item');
CREATE OR REPLACE TRIGGER catalog_items_events_update AFTER UPDATE ON catalog_items FOR EACH ROW
  WHEN (OLD.updated_at IS DISTINCT FROM NEW.updated_at) EXECUTE FUNCTION resource_changed('catalog_item');

CREATE OR REPLACE TRIGGER conversations_events AFTER INSERT OR DELETE ON conversations FOR EACH ROW
  EXECUTE FUNCTION resource_changed('conversation');
CREATE OR REPLACE TRIGGER conversations_events_update AFTER UPDATE ON conversations FOR EACH ROW
  WHEN (OLD.updated_at IS DISTINCT FROM NEW.updated_at) EXECUTE FUNCTION resource_changed('conversation');

CREATE OR REPLACE TRIGGER messages_events AFTER INSERT OR DELETE ON messages FOR EACH ROW
  EXECUTE FUNCTION resource_changed('message');
CREATE OR REPLACE TRIGGER messages_events_update AFTER UPDATE ON messages FOR EACH ROW
  WHEN (OLD.updated_at IS DISTINCT FROM NEW.updated_at) EXECUTE FUNCTION resource_changed('message');

CREATE OR REPLACE TRIGGER automations_events AFTER INSERT OR DELETE ON automations FOR EACH ROW
  EXECUTE FUNCTION resource_changed('automation');
CREATE OR REPLACE TRIGGER automations_events_update AFTER UPDATE ON automations FOR EACH ROW
  WHEN (OLD.updated_at IS DISTINCT FROM NEW.updated_at) EXECUTE FUNCTION resource_changed('automation');

-- ------------------------------------------------------------------ no TRUNCATE

-- TRUNCATE fires no row triggers, so it would remove rows without deletion events: refused on every
-- table the feed covers. Delete rows instead (or delete the workspace).
CREATE OR REPLACE FUNCTION refuse_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'TRUNCATE of % would bypass the events feed; DELETE the rows instead', TG_TABLE_NAME;
END $$;

CREATE OR REPLACE TRIGGER workspaces_no_truncate BEFORE TRUNCATE ON workspaces EXECUTE FUNCTION refuse_truncate();
CREATE OR REPLACE TRIGGER contacts_no_truncate BEFORE TRUNCATE ON contacts EXECUTE FUNCTION refuse_truncate();
CREATE OR REPLACE TRIGGER appointments_no_truncate BEFORE TRUNCATE ON appointments EXECUTE FUNCTION refuse_truncate();
CREATE OR REPLACE TRIGGER pipeline_stages_no_truncate BEFORE TRUNCATE ON pipeline_stages
  EXECUTE FUNCTION refuse_truncate();
CREATE OR REPLACE TRIGGER catalog_items_no_truncate BEFORE TRUNCATE ON catalog_items EXECUTE FUNCTION refuse_truncate();
CREATE OR REPLACE TRIGGER conversations_no_truncate BEFORE TRUNCATE ON conversations EXECUTE FUNCTION refuse_truncate();
CREATE OR REPLACE TRIGGER messages_no_truncate BEFORE TRUNCATE ON messages EXECUTE FUNCTION refuse_truncate();
CREATE OR REPLACE TRIGGER automations_no_truncate BEFORE TRUNCATE ON automations EXECUTE FUNCTION refuse_truncate();
