-- The claim of the delivery loop serves endpoints and workspaces in turn, each up to a cap of
-- attempts in flight (docs/webhooks.md, "Fair delivery"). It reads, per active endpoint, its
-- earliest due deliveries and its attempts in flight, so its cost follows the number of endpoints
-- and of due deliveries it looks at, never the backlog.

-- an endpoint's pending deliveries in the order they are due
CREATE INDEX webhook_deliveries_due_by_endpoint
  ON webhook_deliveries (endpoint_id, next_attempt_at, stamp, seq) WHERE acked_at IS NULL;
-- attempts in flight (a lease is cleared when its result is recorded)
CREATE INDEX webhook_deliveries_leased
  ON webhook_deliveries (endpoint_id) WHERE acked_at IS NULL AND leased_until IS NOT NULL;
-- the claim no longer reads every due delivery in time order
DROP INDEX webhook_deliveries_due;
