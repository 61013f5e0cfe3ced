-- Version 2: the whole workspace model, the product's internal data beside it, and the events feed.
--
-- Internal columns (notes, AI memory, provider data, private URLs, automation rules, billing,
-- credentials) live in the same tables as the public ones. They never leave through the API:
-- repositories select explicit public columns, response schemas are closed, and the events feed is
-- written from the api_*_json() functions (generated from the resources' schemas: src/modules/resources.ts), which name public
-- columns only. Which columns of a table are internal is also said by the arguments of its updated_at
-- trigger (db/code/03_sync_clock.sql): a change of those alone is no change to sync.

-- ------------------------------------------------------------------ internal data of v1 tables

ALTER TABLE workspaces
  ADD COLUMN billing_plan text,
  ADD COLUMN billing_email text,
  ADD COLUMN internal_notes text;

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

ALTER TABLE appointments ADD COLUMN internal_notes text;

-- ------------------------------------------------------------------ pipeline stages

-- The contact statuses are the stages of the default pipeline: a stage's id is the status value.
-- A workspace gets the default stages when it is created (db/code/05_pipeline_stages.sql).
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

-- ------------------------------------------------------------------ the events feed

-- One row per committed change of a public resource, written by the triggers of
-- db/code/04_events_feed.sql.
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

-- Workspaces that exist already get the default stages too (the list of
-- db/code/05_pipeline_stages.sql, written out: a migration calls none of the database's functions).
INSERT INTO pipeline_stages (workspace_id, id, name, position)
SELECT w.id, s.id, s.name, s.position
  FROM workspaces w
 CROSS JOIN (VALUES ('cold_list', 'Cold list', 1), ('prospecting_started', 'Prospecting started', 2),
                    ('talking', 'Talking', 3), ('qualified_conversation', 'Qualified conversation', 4),
                    ('nurturing', 'Nurturing', 5), ('scheduled', 'Scheduled', 6), ('meeting', 'Meeting', 7),
                    ('post_meeting', 'Post-meeting', 8), ('customer_confirmed', 'Customer confirmed', 9),
                    ('lost', 'Lost', 10)) AS s (id, name, position);
