-- Version 1 schema: workspaces, API keys with their usage trail, contacts, appointments, idempotency records.
--
-- Conventions:
--   * every tenant table leads its primary key and indexes with workspace_id, so any lookup is
--     workspace-scoped by construction and the table can be distributed by workspace later;
--   * timestamps are timestamptz(3): millisecond precision is what the API prints, what cursors
--     carry and what a JavaScript Date holds, so a value never changes on a round trip;
--   * updated_at is maintained by triggers (db/code/03_sync_clock.sql), so every writer (the API, the
--     owner CLI, the product's own jobs) moves it the same way, and only when a row really changes.

CREATE TABLE instance_settings (
  name text PRIMARY KEY,
  value text NOT NULL
);

CREATE TABLE workspaces (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended')),
  timezone text NOT NULL DEFAULT 'UTC',
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  updated_at timestamptz(3) NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
  id text PRIMARY KEY,
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  name text NOT NULL,
  secret_sha256 bytea NOT NULL,
  scopes text[] NOT NULL,
  rate_limit_per_minute integer NOT NULL CHECK (rate_limit_per_minute > 0),
  expires_at timestamptz(3),
  revoked_at timestamptz(3),
  rotated_to text REFERENCES api_keys (id),
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  last_used_at timestamptz(3)
);
CREATE INDEX api_keys_workspace ON api_keys (workspace_id, created_at);

-- Per key, per UTC day and per operation: what the owner sees in `keys list` / `keys usage`.
CREATE TABLE api_key_usage (
  key_id text NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
  day date NOT NULL,
  operation text NOT NULL,
  requests bigint NOT NULL DEFAULT 0,
  client_errors bigint NOT NULL DEFAULT 0,
  server_errors bigint NOT NULL DEFAULT 0,
  rate_limited bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (key_id, day, operation)
);

CREATE TABLE contacts (
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  external_id text CHECK (external_id ~ '^[A-Za-z0-9][A-Za-z0-9._:@/-]*$' AND length(external_id) <= 128),
  name text CHECK (length(name) <= 160),
  company_name text CHECK (length(company_name) <= 160),
  email text CHECK (length(email) <= 254),
  phone text CHECK (phone ~ '^\+[1-9][0-9]{7,14}$'),
  whatsapp text CHECK (whatsapp ~ '^\+[1-9][0-9]{7,14}$'),
  origin text CHECK (length(origin) <= 120),
  status text NOT NULL DEFAULT 'cold_list' CHECK (status IN ('cold_list', 'prospecting_started', 'talking',
    'qualified_conversation', 'nurturing', 'scheduled', 'meeting', 'post_meeting', 'customer_confirmed', 'lost')),
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  updated_at timestamptz(3) NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, id),
  UNIQUE (workspace_id, external_id)
);
CREATE INDEX contacts_sync ON contacts (workspace_id, updated_at, id);
CREATE INDEX contacts_status_sync ON contacts (workspace_id, status, updated_at, id);

CREATE TABLE appointments (
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  contact_id uuid,
  starts_at timestamptz(3),
  ends_at timestamptz(3),
  timezone text NOT NULL,
  status text NOT NULL DEFAULT 'scheduled' CHECK (status IN ('scheduled', 'confirmed', 'cancelled', 'rescheduled',
    'completed', 'no_show')),
  source text,
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  updated_at timestamptz(3) NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, id),
  FOREIGN KEY (workspace_id, contact_id) REFERENCES contacts (workspace_id, id) ON DELETE SET NULL (contact_id),
  CHECK (ends_at IS NULL OR starts_at IS NULL OR ends_at >= starts_at)
);
CREATE INDEX appointments_sync ON appointments (workspace_id, updated_at, id);
CREATE INDEX appointments_status_sync ON appointments (workspace_id, status, updated_at, id);
CREATE INDEX appointments_starts ON appointments (workspace_id, starts_at, id);
CREATE INDEX appointments_contact ON appointments (workspace_id, contact_id);

-- One row per executed write: the key is claimed, the write done and the response stored in a
-- single transaction. Rows past expires_at are ignored by readers and purged in the background.
CREATE TABLE idempotency_keys (
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  key text NOT NULL,
  request_sha256 bytea NOT NULL,
  status_code smallint NOT NULL,
  response_body text NOT NULL,
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  expires_at timestamptz(3) NOT NULL,
  PRIMARY KEY (workspace_id, key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
