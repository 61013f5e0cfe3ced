-- The feed filtered by event type (?type=contact.deleted) reads one index range instead of the
-- workspace's whole feed.
CREATE INDEX events_by_type ON events (workspace_id, type, tx_id, seq);
