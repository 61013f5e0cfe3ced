-- Version 2: the whole workspace model, the product's internal data beside it, and the events feed.
--
-- Internal columns (notes, AI memory, provider data, private URLs, automation rules, billing,
-- credentials) live in the same tables as the public ones. They never leave through the API:
-- repositories select explicit public columns, response schemas are closed, and the events feed is
-- written from api_*_json() functions below that name public columns only.
--
-- The events feed: every committed change to a public resource becomes one row of `events`,
-- written by a trigger in the same transaction as the change, whoever the writer is. The feed is
-- ordered by (tx_id, seq): the id of the writing transaction, then the order of the change within
-- it. A reader only sees events of transactions older than the oldest one still running
-- (pg_snapshot_xmin), so everything it has not seen yet sorts after everything it has: no event is
-- ever skipped, however transactions interleave and in whatever order they commit.

-- ------------------------------------------------------------------ updated_at, ignoring internals

-- touch_updated_at(internal columns...) moves updated_at only when a public column changes; an
-- edit of internal data alone (a note, the AI memory) is not a change integrators need to sync.
CREATE OR REPLACE FUNCTION touch_updated_at() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
BEGIN
  IF (to_jsonb(NEW) - TG_ARGV - 'updated_at') IS DISTINCT FROM (to_jsonb(OLD) - TG_ARGV - 'updated_at') THEN
    NEW.updated_at := greatest(clock_timestamp(), OLD.updated_at + interval '1 millisecond');
  ELSE
    NEW.updated_at := OLD.updated_at;
  END IF;
  RETURN NEW;
END
$$;

-- ------------------------------------------------------------------ internal data of v1 tables

ALTER TABLE workspaces
  ADD COLUMN billing_plan text,
  ADD COLUMN billing_email text,
  ADD COLUMN internal_notes text;
DROP TRIGGER workspaces_touch ON workspaces;
CREATE TRIGGER workspaces_touch BEFORE UPDATE ON workspaces FOR EACH ROW
  EXECUTE FUNCTION touch_updated_at('billing_plan', 'billing_email', 'internal_notes');

CREATE TABLE workspace_credentials (
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  provider text NOT NULL,
  secret text NOT NULL,
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, id)
);

ALTER TABLE contacts
  ADD COLUMN notes text,
  ADD COLUMN ai_memory jsonb;
DROP TRIGGER contacts_touch ON contacts;
CREATE TRIGGER contacts_touch BEFORE UPDATE ON contacts FOR EACH ROW
  EXECUTE FUNCTION touch_updated_at('notes', 'ai_memory');

ALTER TABLE appointments ADD COLUMN internal_notes text;
DROP TRIGGER appointments_touch ON appointments;
CREATE TRIGGER appointments_touch BEFORE UPDATE ON appointments FOR EACH ROW
  EXECUTE FUNCTION touch_updated_at('internal_notes');

-- ------------------------------------------------------------------ pipeline stages

-- The contact statuses are the stages of the default pipeline: a stage's id is the status value.
CREATE TABLE pipeline_stages (
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  id text NOT NULL,
  name text NOT NULL,
  position integer NOT NULL,
  internal_notes text,
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  updated_at timestamptz(3) NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, id)
);
CREATE INDEX pipeline_stages_sync ON pipeline_stages (workspace_id, updated_at, id);
CREATE TRIGGER pipeline_stages_touch BEFORE UPDATE ON pipeline_stages FOR EACH ROW
  EXECUTE FUNCTION touch_updated_at('internal_notes');

CREATE FUNCTION default_pipeline_stages() RETURNS TABLE (id text, name text, "position" integer)
  LANGUAGE sql IMMUTABLE
  AS $$
  VALUES ('cold_list', 'Cold list', 1), ('prospecting_started', 'Prospecting started', 2), ('talking', 'Talking', 3),
         ('qualified_conversation', 'Qualified conversation', 4), ('nurturing', 'Nurturing', 5),
         ('scheduled', 'Scheduled', 6), ('meeting', 'Meeting', 7), ('post_meeting', 'Post-meeting', 8),
         ('customer_confirmed', 'Customer confirmed', 9), ('lost', 'Lost', 10)
$$;

CREATE FUNCTION create_default_stages() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
BEGIN
  INSERT INTO pipeline_stages (workspace_id, id, name, position)
  SELECT NEW.id, s.id, s.name, s.position FROM default_pipeline_stages() s;
  RETURN NULL;
END
$$;

-- ------------------------------------------------------------------ catalog

CREATE TABLE catalog_items (
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  kind text NOT NULL CHECK (kind IN ('product', 'service')),
  name text NOT NULL,
  description text,
  price_amount bigint CHECK (price_amount >= 0),
  currency text CHECK (currency ~ '^[A-Z]{3}$'),
  duration_minutes integer CHECK (duration_minutes > 0),
  active boolean NOT NULL DEFAULT true,
  private_notes text,
  internal_metadata jsonb,
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  updated_at timestamptz(3) NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, id),
  CHECK ((price_amount IS NULL) = (currency IS NULL))
);
CREATE INDEX catalog_items_sync ON catalog_items (workspace_id, updated_at, id);
CREATE TRIGGER catalog_items_touch BEFORE UPDATE ON catalog_items FOR EACH ROW
  EXECUTE FUNCTION touch_updated_at('private_notes', 'internal_metadata');

-- ------------------------------------------------------------------ conversations and messages

CREATE TABLE conversations (
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  contact_id uuid NOT NULL,
  channel text NOT NULL CHECK (channel IN ('whatsapp', 'email', 'instagram', 'sms', 'webchat')),
  status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'closed')),
  last_message_at timestamptz(3),
  provider text,
  provider_conversation_id text,
  provider_payload jsonb,
  private_url text,
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  updated_at timestamptz(3) NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, id),
  UNIQUE (workspace_id, contact_id, channel),
  FOREIGN KEY (workspace_id, contact_id) REFERENCES contacts (workspace_id, id) ON DELETE CASCADE
);
CREATE INDEX conversations_sync ON conversations (workspace_id, updated_at, id);
CREATE TRIGGER conversations_touch BEFORE UPDATE ON conversations FOR EACH ROW
  EXECUTE FUNCTION touch_updated_at('provider', 'provider_conversation_id', 'provider_payload', 'private_url');

CREATE TABLE messages (
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  conversation_id uuid NOT NULL,
  contact_id uuid NOT NULL,
  direction text NOT NULL CHECK (direction IN ('inbound', 'outbound')),
  kind text NOT NULL DEFAULT 'text' CHECK (kind IN ('text', 'image', 'audio', 'video', 'document', 'template')),
  text text,
  sent_at timestamptz(3),
  provider_message_id text,
  provider_payload jsonb,
  media_private_url text,
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  updated_at timestamptz(3) NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, id),
  FOREIGN KEY (workspace_id, conversation_id) REFERENCES conversations (workspace_id, id) ON DELETE CASCADE
);
CREATE INDEX messages_by_contact ON messages (workspace_id, contact_id, created_at, id);
CREATE INDEX messages_by_conversation ON messages (workspace_id, conversation_id);
CREATE TRIGGER messages_touch BEFORE UPDATE ON messages FOR EACH ROW
  EXECUTE FUNCTION touch_updated_at('provider_message_id', 'provider_payload', 'media_private_url');

-- ------------------------------------------------------------------ automations

CREATE TABLE automations (
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  name text NOT NULL,
  status text NOT NULL DEFAULT 'draft' CHECK (status IN ('active', 'paused', 'draft')),
  trigger_kind text NOT NULL CHECK (trigger_kind IN ('contact_created', 'contact_status_changed',
    'appointment_scheduled', 'appointment_status_changed', 'message_received', 'schedule')),
  last_run_at timestamptz(3),
  run_count bigint NOT NULL DEFAULT 0 CHECK (run_count >= 0),
  success_count bigint NOT NULL DEFAULT 0 CHECK (success_count >= 0),
  failure_count bigint NOT NULL DEFAULT 0 CHECK (failure_count >= 0),
  rules jsonb,
  conditions jsonb,
  actions jsonb,
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  updated_at timestamptz(3) NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, id)
);
CREATE INDEX automations_sync ON automations (workspace_id, updated_at, id);
CREATE TRIGGER automations_touch BEFORE UPDATE ON automations FOR EACH ROW
  EXECUTE FUNCTION touch_updated_at('rules', 'conditions', 'actions');

CREATE TABLE automation_logs (
  workspace_id uuid NOT NULL,
  automation_id uuid NOT NULL,
  id bigint GENERATED ALWAYS AS IDENTITY,
  logged_at timestamptz(3) NOT NULL DEFAULT now(),
  message text NOT NULL,
  details jsonb,
  PRIMARY KEY (workspace_id, automation_id, id),
  FOREIGN KEY (workspace_id, automation_id) REFERENCES automations (workspace_id, id) ON DELETE CASCADE
);

-- ------------------------------------------------------------------ public representations

-- The only shapes the feed can carry: the same properties, names and formats as the API's.
CREATE FUNCTION api_workspace_json(w workspaces) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('id', w.id, 'name', w.name, 'status', w.status, 'timezone', w.timezone,
    'created_at', api_time(w.created_at), 'updated_at', api_time(w.updated_at)) $$;

CREATE FUNCTION api_contact_json(c contacts) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('id', c.id, 'external_id', c.external_id, 'name', c.name,
    'company_name', c.company_name, 'email', c.email, 'phone', c.phone, 'whatsapp', c.whatsapp,
    'origin', c.origin, 'status', c.status, 'created_at', api_time(c.created_at),
    'updated_at', api_time(c.updated_at)) $$;

CREATE FUNCTION api_appointment_json(a appointments) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('id', a.id, 'contact_id', a.contact_id, 'starts_at', api_time(a.starts_at),
    'ends_at', api_time(a.ends_at), 'timezone', a.timezone, 'status', a.status, 'source', a.source,
    'created_at', api_time(a.created_at), 'updated_at', api_time(a.updated_at)) $$;

CREATE FUNCTION api_pipeline_stage_json(s pipeline_stages) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('id', s.id, 'name', s.name, 'position', s.position,
    'created_at', api_time(s.created_at), 'updated_at', api_time(s.updated_at)) $$;

CREATE FUNCTION api_catalog_item_json(i catalog_items) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('id', i.id, 'kind', i.kind, 'name', i.name, 'description', i.description,
    'price_amount', i.price_amount, 'currency', i.currency, 'duration_minutes', i.duration_minutes,
    'active', i.active, 'created_at', api_time(i.created_at), 'updated_at', api_time(i.updated_at)) $$;

CREATE FUNCTION api_conversation_json(c conversations) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('id', c.id, 'contact_id', c.contact_id, 'channel', c.channel, 'status', c.status,
    'last_message_at', api_time(c.last_message_at), 'created_at', api_time(c.created_at),
    'updated_at', api_time(c.updated_at)) $$;

CREATE FUNCTION api_message_json(m messages) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('id', m.id, 'conversation_id', m.conversation_id, 'contact_id', m.contact_id,
    'direction', m.direction, 'kind', m.kind, 'text', m.text, 'sent_at', api_time(m.sent_at),
    'created_at', api_time(m.created_at), 'updated_at', api_time(m.updated_at)) $$;

CREATE FUNCTION api_automation_json(a automations) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('id', a.id, 'name', a.name, 'status', a.status, 'trigger_kind', a.trigger_kind,
    'last_run_at', api_time(a.last_run_at), 'run_count', a.run_count, 'success_count', a.success_count,
    'failure_count', a.failure_count, 'created_at', api_time(a.created_at),
    'updated_at', api_time(a.updated_at)) $$;

-- ------------------------------------------------------------------ the events feed

CREATE SEQUENCE events_seq AS bigint;

CREATE TABLE events (
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  tx_id xid8 NOT NULL DEFAULT pg_current_xact_id(),
  seq bigint NOT NULL DEFAULT nextval('events_seq'),
  type text NOT NULL,
  resource_type text NOT NULL,
  resource_id text NOT NULL,
  occurred_at timestamptz(3) NOT NULL DEFAULT clock_timestamp(),
  request_id text,
  data jsonb NOT NULL,
  PRIMARY KEY (workspace_id, tx_id, seq)
);
CREATE INDEX events_by_resource ON events (workspace_id, resource_type, resource_id, tx_id, seq);
CREATE INDEX events_retention ON events (occurred_at);

-- Called by the row triggers below. The request id is set (transaction-local) by the API, so
-- changes made through it can be traced; other writers leave it empty.
CREATE FUNCTION emit_event(ws uuid, resource_type text, op text, resource_id text, data jsonb) RETURNS void
  LANGUAGE sql
  AS $$
  INSERT INTO events (workspace_id, type, resource_type, resource_id, request_id, data)
  SELECT ws, resource_type || CASE op WHEN 'INSERT' THEN '.created' WHEN 'UPDATE' THEN '.updated' ELSE '.deleted' END,
         resource_type, resource_id, nullif(current_setting('app.request_id', true), ''),
         coalesce(data, jsonb_build_object('id', resource_id))
  -- A workspace being deleted takes its resources and its events with it: nothing to record.
  WHERE EXISTS (SELECT 1 FROM workspaces WHERE id = ws)
$$;

CREATE FUNCTION workspaces_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN RETURN NULL; END IF; -- events of a deleted workspace go with it
  PERFORM emit_event(NEW.id, 'workspace', TG_OP, NEW.id::text, api_workspace_json(NEW));
  RETURN NULL;
END $$;

-- One trigger function for every workspace-owned table; its argument names the resource type,
-- which also names the function that writes the public representation (api_<type>_json).
CREATE FUNCTION resource_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  kind text := TG_ARGV[0];
  representation jsonb;
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM emit_event(OLD.workspace_id, kind, TG_OP, OLD.id::text, NULL);
  ELSE
    EXECUTE format('SELECT api_%s_json($1)', kind) INTO representation USING NEW;
    PERFORM emit_event(NEW.workspace_id, kind, TG_OP, NEW.id::text, representation);
  END IF;
  RETURN NULL;
END $$;

-- Inserts and deletes always count; an update counts when it moved updated_at, i.e. when a public
-- property changed (see touch_updated_at).
CREATE TRIGGER workspaces_events AFTER INSERT ON workspaces FOR EACH ROW EXECUTE FUNCTION workspaces_changed();
CREATE TRIGGER workspaces_events_update AFTER UPDATE ON workspaces FOR EACH ROW
  WHEN (OLD.updated_at IS DISTINCT FROM NEW.updated_at) EXECUTE FUNCTION workspaces_changed();
-- Named to fire after workspaces_events (triggers fire in name order): the stages' events follow
-- the workspace's.
CREATE TRIGGER workspaces_stages AFTER INSERT ON workspaces FOR EACH ROW EXECUTE FUNCTION create_default_stages();

CREATE TRIGGER contacts_events AFTER INSERT OR DELETE ON contacts FOR EACH ROW EXECUTE FUNCTION resource_changed('contact');
CREATE TRIGGER contacts_events_update AFTER UPDATE ON contacts FOR EACH ROW
  WHEN (OLD.updated_at IS DISTINCT FROM NEW.updated_at) EXECUTE FUNCTION resource_changed('contact');

CREATE TRIGGER appointments_events AFTER INSERT OR DELETE ON appointments FOR EACH ROW EXECUTE FUNCTION resource_changed('appointment');
CREATE TRIGGER appointments_events_update AFTER UPDATE ON appointments FOR EACH ROW
  WHEN (OLD.updated_at IS DISTINCT FROM NEW.updated_at) EXECUTE FUNCTION resource_changed('appointment');

CREATE TRIGGER pipeline_stages_events AFTER INSERT OR DELETE ON pipeline_stages FOR EACH ROW
  EXECUTE FUNCTION resource_changed('pipeline_stage');
CREATE TRIGGER pipeline_stages_events_update AFTER UPDATE ON pipeline_stages FOR EACH ROW
  WHEN (OLD.updated_at IS DISTINCT FROM NEW.updated_at) EXECUTE FUNCTION resource_changed('pipeline_stage');

CREATE TRIGGER catalog_items_events AFTER INSERT OR DELETE ON catalog_items FOR EACH ROW
  EXECUTE FUNCTION resource_changed('catalog_item');
CREATE TRIGGER catalog_items_events_update AFTER UPDATE ON catalog_items FOR EACH ROW
  WHEN (OLD.updated_at IS DISTINCT FROM NEW.updated_at) EXECUTE FUNCTION resource_changed('catalog_item');

CREATE TRIGGER conversations_events AFTER INSERT OR DELETE ON conversations FOR EACH ROW
  EXECUTE FUNCTION resource_changed('conversation');
CREATE TRIGGER conversations_events_update AFTER UPDATE ON conversations FOR EACH ROW
  WHEN (OLD.updated_at IS DISTINCT FROM NEW.updated_at) EXECUTE FUNCTION resource_changed('conversation');

CREATE TRIGGER messages_events AFTER INSERT OR DELETE ON messages FOR EACH ROW EXECUTE FUNCTION resource_changed('message');
CREATE TRIGGER messages_events_update AFTER UPDATE ON messages FOR EACH ROW
  WHEN (OLD.updated_at IS DISTINCT FROM NEW.updated_at) EXECUTE FUNCTION resource_changed('message');

CREATE TRIGGER automations_events AFTER INSERT OR DELETE ON automations FOR EACH ROW
  EXECUTE FUNCTION resource_changed('automation');
CREATE TRIGGER automations_events_update AFTER UPDATE ON automations FOR EACH ROW
  WHEN (OLD.updated_at IS DISTINCT FROM NEW.updated_at) EXECUTE FUNCTION resource_changed('automation');

-- Workspaces created before this migration get their stages too (their events with them).
INSERT INTO pipeline_stages (workspace_id, id, name, position)
SELECT w.id, s.id, s.name, s.position FROM workspaces w CROSS JOIN default_pipeline_stages() s;

-- TRUNCATE fires no row triggers, so it would remove rows without deletion events: refuse it on
-- every table the feed covers. Delete rows instead (or delete the workspace).
CREATE FUNCTION refuse_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'TRUNCATE of % would bypass the events feed; DELETE the rows instead', TG_TABLE_NAME;
END $$;
CREATE TRIGGER workspaces_no_truncate BEFORE TRUNCATE ON workspaces EXECUTE FUNCTION refuse_truncate();
CREATE TRIGGER contacts_no_truncate BEFORE TRUNCATE ON contacts EXECUTE FUNCTION refuse_truncate();
CREATE TRIGGER appointments_no_truncate BEFORE TRUNCATE ON appointments EXECUTE FUNCTION refuse_truncate();
CREATE TRIGGER pipeline_stages_no_truncate BEFORE TRUNCATE ON pipeline_stages EXECUTE FUNCTION refuse_truncate();
CREATE TRIGGER catalog_items_no_truncate BEFORE TRUNCATE ON catalog_items EXECUTE FUNCTION refuse_truncate();
CREATE TRIGGER conversations_no_truncate BEFORE TRUNCATE ON conversations EXECUTE FUNCTION refuse_truncate();
CREATE TRIGGER messages_no_truncate BEFORE TRUNCATE ON messages EXECUTE FUNCTION refuse_truncate();
CREATE TRIGGER automations_no_truncate BEFORE TRUNCATE ON automations EXECUTE FUNCTION refuse_truncate();
