-- Per workspace, the latest feed position whose event retention has deleted. A reader resuming
-- after an earlier position has missed at least that event, and is told so (410 events_expired)
-- instead of silently continuing past the hole.
CREATE TABLE events_purged (
  workspace_id uuid PRIMARY KEY REFERENCES workspaces (id) ON DELETE CASCADE,
  tx_id xid8 NOT NULL,
  seq bigint NOT NULL,
  purged_at timestamptz(3) NOT NULL DEFAULT now()
);
