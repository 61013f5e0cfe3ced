-- The sync clock of each workspace: the last stamp issued to one of its transactions. Stamps
-- (updated_at, a message's created_at, the feed's positions) come from this row, which the stamping
-- transaction holds until it commits, so they follow the workspace's commit order
-- (db/code/03_sync_clock.sql explains why and how; docs/sync.md).

CREATE TABLE workspace_clocks (
  workspace_id uuid PRIMARY KEY REFERENCES workspaces (id) ON DELETE CASCADE,
  last_stamp timestamptz(3) NOT NULL
) WITH (fillfactor = 50); -- one row updated per write transaction: room for HOT updates

-- Existing workspaces: the clock starts after every stamp already written.
INSERT INTO workspace_clocks (workspace_id, last_stamp)
SELECT w.id, greatest(now(), max(s.stamp))
  FROM workspaces w
  LEFT JOIN (
    SELECT workspace_id, max(updated_at) AS stamp FROM contacts GROUP BY workspace_id
    UNION ALL SELECT workspace_id, max(updated_at) FROM appointments GROUP BY workspace_id
    UNION ALL SELECT workspace_id, max(updated_at) FROM pipeline_stages GROUP BY workspace_id
    UNION ALL SELECT workspace_id, max(updated_at) FROM catalog_items GROUP BY workspace_id
    UNION ALL SELECT workspace_id, max(updated_at) FROM conversations GROUP BY workspace_id
    UNION ALL SELECT workspace_id, max(greatest(updated_at, created_at)) FROM messages GROUP BY workspace_id
    UNION ALL SELECT workspace_id, max(updated_at) FROM automations GROUP BY workspace_id
  ) s ON s.workspace_id = w.id
 GROUP BY w.id;
