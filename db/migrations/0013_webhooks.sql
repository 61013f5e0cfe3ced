-- Signed outbound webhooks (docs/webhooks.md). The events table is the outbox: an endpoint keeps the
-- feed position up to which its events have been turned into delivery rows, and a delivery row
-- lives until the receiver answers 2xx. Nothing is written by the event triggers, so writes of the
-- workspace pay nothing for webhooks.

CREATE TABLE webhook_endpoints (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  url text NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
  -- event types as /v2/events names them; NULL: every type the scopes read
  event_types text[],
  -- the scopes of a key (shared/scopes.ts): the endpoint receives what such a key reads in the feed
  scopes text[] NOT NULL,
  status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled', 'failing')),
  -- why the endpoint is not active (set by delivery or by the owner), shown by `webhooks list`
  status_reason text,
  -- the Standard Webhooks secret (whsec_…): it signs, so it is kept as is, like a key's HMAC secret
  secret text NOT NULL,
  -- during a rotation's grace period, deliveries carry a signature with this one too
  previous_secret text,
  previous_secret_expires_at timestamptz(3),
  -- feed position up to which events have been enqueued as deliveries
  position_stamp bigint NOT NULL,
  position_seq bigint NOT NULL,
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  updated_at timestamptz(3) NOT NULL DEFAULT now()
);
CREATE INDEX webhook_endpoints_by_workspace ON webhook_endpoints (workspace_id, created_at);
-- The delivery loop of every process looks for active endpoints every few hundred milliseconds.
CREATE INDEX webhook_endpoints_active ON webhook_endpoints (id) WHERE status = 'active';

-- One row per (endpoint, event): pending until acknowledged by a 2xx.
CREATE TABLE webhook_deliveries (
  endpoint_id uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  stamp bigint NOT NULL,
  seq bigint NOT NULL,
  resource_type text NOT NULL,
  resource_id text NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz(3) NOT NULL DEFAULT now(),
  -- while set and in the future, one process is attempting it; after it, any process may
  leased_until timestamptz(3),
  -- names the attempt holding the lease: a result is recorded only by the attempt that holds it
  lease_token uuid,
  acked_at timestamptz(3),
  last_status integer,
  last_error text,
  last_duration_ms integer,
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  PRIMARY KEY (endpoint_id, stamp, seq)
);
-- what is due (the claim of the delivery loop)
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE acked_at IS NULL;
-- "is an earlier event of this resource still pending?" (ordering per resource), and the oldest
-- pending event of an endpoint (metrics)
CREATE INDEX webhook_deliveries_pending_by_resource
  ON webhook_deliveries (endpoint_id, resource_type, resource_id, stamp, seq) WHERE acked_at IS NULL;
-- housekeeping of acknowledged rows
CREATE INDEX webhook_deliveries_acked ON webhook_deliveries (acked_at) WHERE acked_at IS NOT NULL;

-- Every attempt, for `webhooks deliveries` (trimmed by housekeeping).
CREATE TABLE webhook_attempts (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  endpoint_id uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  -- the webhook-id sent: the event id, or test_… for `webhooks test`
  message_id text NOT NULL,
  event_type text,
  attempted_at timestamptz(3) NOT NULL DEFAULT now(),
  -- acked, failed, timeout, unreachable, refused
  outcome text NOT NULL,
  status integer,
  duration_ms integer NOT NULL,
  error text
);
CREATE INDEX webhook_attempts_by_endpoint ON webhook_attempts (endpoint_id, id DESC);
CREATE INDEX webhook_attempts_by_time ON webhook_attempts (attempted_at);
