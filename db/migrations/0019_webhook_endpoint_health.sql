-- How an endpoint has answered lately, for the circuit breaker of the delivery loop
-- (docs/webhooks.md, "When a receiver is down"). A row exists while the endpoint's latest attempts
-- failed; a 2xx deletes it. Kept apart from webhook_endpoints: the owner's view of an endpoint
-- (and its updated_at) changes only by the owner's commands and by its status.
CREATE TABLE webhook_endpoint_health (
  endpoint_id uuid PRIMARY KEY REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  -- attempts that failed in a row (any answer but a 2xx, a timeout, a refused connection)
  failures_in_a_row integer NOT NULL,
  -- when the first of them was made
  failing_since timestamptz(3) NOT NULL,
  -- the current pause, once the failures are enough to pause the endpoint; doubled by each failed probe
  pause_ms integer,
  -- while in the future, no attempt is made to the endpoint at all
  paused_until timestamptz(3)
);
