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
-- integration that follows the feed, again on every resync), so its JSON is built once, when the
-- event is written. `data_text` is the event's data as compact JSON, its public properties in
-- schema order.
CREATE OR REPLACE FUNCTION event_feed_json(type text, resource_type text, resource_id text, occurred_at timestamptz,
                                           request_id text, data_text text) RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE -- as to_json: inlined into the statement that writes the events
  AS $$
  SELECT '{"type":' || to_json(type)::text || ',"resource_type":' || to_json(resource_type)::text ||
         ',"resource_id":' || to_json(resource_id)::text || ',"occurred_at":' || to_json(api_time(occurred_at))::text ||
         ',"request_id":' || coalesce(to_json(request_id)::text, 'null') || ',"data":' || data_text || '}' $$;

-- Who writes the text. The feed's own triggers (record_events and workspaces_changed below) write it
-- with the event: they build the changed row's public text with the generated api_<kind>_text, and
-- parse the event's data from that same text, so the two cannot disagree, at a fraction of the
-- cost of rebuilding the text from the data. Every other writer (plain SQL, a replica's apply,
-- anything that is not a trigger) gets its text rebuilt from its data here, whatever it put in it,
-- and an update of an event (an erasure of its data) always rebuilds it: the text cannot say more
-- than the data it is made from.
CREATE OR REPLACE FUNCTION write_feed_json() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
BEGIN
  NEW.feed_json := event_feed_json(NEW.type, NEW.resource_type, NEW.resource_id, NEW.occurred_at, NEW.request_id,
                                   api_public_json(NEW.resource_type, NEW.data));
  RETURN NEW;
END
$$;

-- pg_trigger_depth() = 0: the insert does not come from a trigger.
CREATE OR REPLACE TRIGGER events_feed_json BEFORE INSERT ON events FOR EACH ROW
  WHEN (pg_trigger_depth() = 0) EXECUTE FUNCTION write_feed_json();
CREATE OR REPLACE TRIGGER events_feed_json_on_update BEFORE UPDATE ON events FOR EACH ROW
  EXECUTE FUNCTION write_feed_json();
-- Also in sessions with session_replication_role = replica (a bulk load, a logical replica's apply),
-- which skip ordinary triggers: no writer can leave an event without its text.
ALTER TABLE events ENABLE ALWAYS TRIGGER events_feed_json;
ALTER TABLE events ENABLE ALWAYS TRIGGER events_feed_json_on_update;

-- ------------------------------------------------------------------ writing events

CREATE OR REPLACE FUNCTION workspaces_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  event_type text := 'workspace.' || CASE TG_OP WHEN 'INSERT' THEN 'created' ELSE 'updated' END;
  occurred timestamptz(3) := clock_timestamp();
  request text := nullif(current_setting('app.request_id', true), '');
  public_text text := api_workspace_text(NEW);
BEGIN
  INSERT INTO events (workspace_id, stamp, type, resource_type, resource_id, occurred_at, request_id, data, feed_json)
  VALUES (NEW.id, stamp_position(sync_stamp(NEW.id)), event_type, 'workspace', NEW.id::text, occurred, request,
          public_text::jsonb, event_feed_json(event_type, 'workspace', NEW.id::text, occurred, request, public_text));
  RETURN NULL;
END $$;

-- The events of one statement's changes to a workspace-owned table, written together at its end
-- (a statement trigger over the statement's transition tables: new_rows, and old_rows for updates
-- and deletions), in the order the statement changed the rows: a batch of a hundred contacts is one
-- INSERT into events, not a hundred. The argument names the resource type. One statement that both
-- creates and updates rows (INSERT … ON CONFLICT DO UPDATE) has its updates' events written first,
-- as PostgreSQL fires the update's statement triggers before the insert's; a batch upsert writes
-- each run of created or updated items as a statement of its own, so its events keep item order.
--
-- * created, updated: the row's public representation, by a direct call of its api_<kind>_text()
--   (generated from the resource's schema): PL/pgSQL plans a branch the first time it runs, for
--   the table the trigger fires on, so each branch is only ever planned for its own row type. An
--   update counts when it moved updated_at, i.e. when a public property changed (03_sync_clock.sql):
--   a change of internal data alone writes no event.
-- * deleted: the tombstone, {id}, and for a contact its external_id (public data) beside it, so a
--   CRM that keys its records by external id applies the deletion without keeping a map of our ids;
--   and erasure: the resource's earlier events now say no more than its tombstone.
--
-- Every event takes its workspace's sync clock (once per workspace and statement, in workspace id
-- order, so two statements that span workspaces take their clocks in one order). A workspace being
-- deleted takes its resources and its events with it: nothing is recorded for it. The request id
-- is set (transaction-local) by the API, so changes made through it can be traced; other writers
-- leave it empty.
CREATE OR REPLACE FUNCTION record_events() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
DECLARE
  resource_kind text := TG_ARGV[0]; -- not `kind`: catalog_items and messages have a column of that name
  event_type text := resource_kind || CASE TG_OP WHEN 'INSERT' THEN '.created' WHEN 'UPDATE' THEN '.updated'
                                                 ELSE '.deleted' END;
  occurred timestamptz(3) := clock_timestamp();
  request text := nullif(current_setting('app.request_id', true), '');
  -- one element per changed row, in the statement's order
  workspace_ids uuid[];
  ids text[];
  public_texts text[]; -- the event's data as compact JSON (its feed text)
  recorded boolean[]; -- updates only: whether the row's public properties changed
BEGIN
  IF TG_OP = 'DELETE' THEN
    SELECT array_agg(r.workspace_id), array_agg(r.id::text),
           array_agg(api_public_json(resource_kind,
                                     CASE WHEN resource_kind = 'contact'
                                          THEN jsonb_build_object('id', r.id, 'external_id', to_jsonb(r) -> 'external_id')
                                          ELSE jsonb_build_object('id', r.id) END))
      INTO workspace_ids, ids, public_texts
      FROM old_rows r;
    IF workspace_ids IS NULL THEN
      RETURN NULL; -- a statement that deleted nothing
    END IF;
    UPDATE events e SET data = t.tombstone::jsonb
      FROM unnest(workspace_ids, ids, public_texts) AS t(workspace_id, id, tombstone)
     WHERE e.workspace_id = t.workspace_id AND e.resource_type = resource_kind AND e.resource_id = t.id
       AND e.data <> t.tombstone::jsonb AND t.workspace_id IN (SELECT w.id FROM workspaces w);
  ELSE
    IF resource_kind = 'contact' THEN
      SELECT array_agg(r.workspace_id), array_agg(r.id::text), array_agg(api_contact_text(r))
        INTO workspace_ids, ids, public_texts FROM new_rows r;
    ELSIF resource_kind = 'appointment' THEN
      SELECT array_agg(r.workspace_id), array_agg(r.id::text), array_agg(api_appointment_text(r))
        INTO workspace_ids, ids, public_texts FROM new_rows r;
    ELSIF resource_kind = 'pipeline_stage' THEN
      SELECT array_agg(r.workspace_id), array_agg(r.id::text), array_agg(api_pipeline_stage_text(r))
        INTO workspace_ids, ids, public_texts FROM new_rows r;
    ELSIF resource_kind = 'catalog_item' THEN
      SELECT array_agg(r.workspace_id), array_agg(r.id::text), array_agg(api_catalog_item_text(r))
        INTO workspace_ids, ids, public_texts FROM new_rows r;
    ELSIF resource_kind = 'conversation' THEN
      SELECT array_agg(r.workspace_id), array_agg(r.id::text), array_agg(api_conversation_text(r))
        INTO workspace_ids, ids, public_texts FROM new_rows r;
    ELSIF resource_kind = 'message' THEN
      SELECT array_agg(r.workspace_id), array_agg(r.id::text), array_agg(api_message_text(r))
        INTO workspace_ids, ids, public_texts FROM new_rows r;
    ELSIF resource_kind = 'automation' THEN
      SELECT array_agg(r.workspace_id), array_agg(r.id::text), array_agg(api_automation_text(r))
        INTO workspace_ids, ids, public_texts FROM new_rows r;
    ELSE
      RAISE EXCEPTION 'record_events: no representation for resource type %', resource_kind;
    END IF;
    IF workspace_ids IS NULL THEN
      RETURN NULL; -- a statement that changed nothing
    END IF;
    IF TG_OP = 'UPDATE' THEN
      -- In the order of new_rows, as the arrays above; the subquery is hashed, not joined.
      recorded := ARRAY(SELECT NOT ((r.workspace_id, r.id, r.updated_at) IN
                                    (SELECT o.workspace_id, o.id, o.updated_at FROM old_rows o))
                          FROM new_rows r);
    END IF;
  END IF;
  WITH stamps AS MATERIALIZED (
    SELECT w.id AS workspace_id, stamp_position(sync_stamp(w.id)) AS stamp
      FROM workspaces w WHERE w.id = ANY(workspace_ids) ORDER BY w.id)
  INSERT INTO events (workspace_id, stamp, type, resource_type, resource_id, occurred_at, request_id, data, feed_json)
  SELECT c.workspace_id, s.stamp, event_type, resource_kind, c.id, occurred, request, c.public_text::jsonb,
         event_feed_json(event_type, resource_kind, c.id, occurred, request, c.public_text)
    FROM unnest(workspace_ids, ids, public_texts, recorded) WITH ORDINALITY
           AS c(workspace_id, id, public_text, recorded, place)
    JOIN stamps s ON s.workspace_id = c.workspace_id
   WHERE c.recorded IS NOT FALSE
   ORDER BY c.place;
  RETURN NULL;
END
$$;

-- A workspace's own events: a row trigger (a workspace is created or renamed one at a time); an
-- update counts when it moved updated_at.
CREATE OR REPLACE TRIGGER workspaces_events AFTER INSERT ON workspaces FOR EACH ROW
  EXECUTE FUNCTION workspaces_changed();
CREATE OR REPLACE TRIGGER workspaces_events_update AFTER UPDATE ON workspaces FOR EACH ROW
  WHEN (OLD.updated_at IS DISTINCT FROM NEW.updated_at) EXECUTE FUNCTION workspaces_changed();

CREATE OR REPLACE TRIGGER contacts_created AFTER INSERT ON contacts REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION record_events('contact');
CREATE OR REPLACE TRIGGER contacts_updated AFTER UPDATE ON contacts REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION record_events('contact');
CREATE OR REPLACE TRIGGER contacts_deleted AFTER DELETE ON contacts REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION record_events('contact');

CREATE OR REPLACE TRIGGER appointments_created AFTER INSERT ON appointments REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION record_events('appointment');
CREATE OR REPLACE TRIGGER appointments_updated AFTER UPDATE ON appointments REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION record_events('appointment');
CREATE OR REPLACE TRIGGER appointments_deleted AFTER DELETE ON appointments REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION record_events('appointment');

CREATE OR REPLACE TRIGGER pipeline_stages_created AFTER INSERT ON pipeline_stages REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION record_events('pipeline_stage');
CREATE OR REPLACE TRIGGER pipeline_stages_updated AFTER UPDATE ON pipeline_stages REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION record_events('pipeline_stage');
CREATE OR REPLACE TRIGGER pipeline_stages_deleted AFTER DELETE ON pipeline_stages REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION record_events('pipeline_stage');

CREATE OR REPLACE TRIGGER catalog_items_created AFTER INSERT ON catalog_items REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION record_events('catalog_item');
CREATE OR REPLACE TRIGGER catalog_items_updated AFTER UPDATE ON catalog_items REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION record_events('catalog_item');
CREATE OR REPLACE TRIGGER catalog_items_deleted AFTER DELETE ON catalog_items REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION record_events('catalog_item');

CREATE OR REPLACE TRIGGER conversations_created AFTER INSERT ON conversations REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION record_events('conversation');
CREATE OR REPLACE TRIGGER conversations_updated AFTER UPDATE ON conversations REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION record_events('conversation');
CREATE OR REPLACE TRIGGER conversations_deleted AFTER DELETE ON conversations REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION record_events('conversation');

CREATE OR REPLACE TRIGGER messages_created AFTER INSERT ON messages REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION record_events('message');
CREATE OR REPLACE TRIGGER messages_updated AFTER UPDATE ON messages REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION record_events('message');
CREATE OR REPLACE TRIGGER messages_deleted AFTER DELETE ON messages REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION record_events('message');

CREATE OR REPLACE TRIGGER automations_created AFTER INSERT ON automations REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION record_events('automation');
CREATE OR REPLACE TRIGGER automations_updated AFTER UPDATE ON automations REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION record_events('automation');
CREATE OR REPLACE TRIGGER automations_deleted AFTER DELETE ON automations REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION record_events('automation');

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
