-- The events feed, private to its workspace: an event's position is (stamp, seq), the stamp its
-- transaction took from the workspace's own sync clock, in milliseconds, and a sequence that orders
-- the events of one stamp (db/code/04_events_feed.sql). Positions say nothing of other workspaces,
-- and no transaction of another workspace holds this feed back.

ALTER TABLE events ADD COLUMN stamp bigint;

-- Events already stored, placed by (tx_id, seq): numbered 1, 2, 3... per workspace in that order.
-- As stamps these are milliseconds of 1970, before anything the clock gives, so every new event
-- follows them. events_legacy_positions maps each (tx_id, seq), the position an id
-- evt_<transaction>_<sequence> names, onto its stamp, so followers holding such ids and head
-- positions resume exactly where they were.
CREATE TABLE events_legacy_positions (
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  tx_id xid8 NOT NULL,
  seq bigint NOT NULL,
  stamp bigint NOT NULL,
  PRIMARY KEY (workspace_id, tx_id, seq)
);
INSERT INTO events_legacy_positions (workspace_id, tx_id, seq, stamp)
SELECT workspace_id, tx_id, seq, row_number() OVER (PARTITION BY workspace_id ORDER BY tx_id, seq)
  FROM events;
DROP INDEX events_by_resource;
DROP INDEX events_by_type;
ALTER TABLE events DROP CONSTRAINT events_pkey;
UPDATE events e SET stamp = l.stamp, seq = 0
  FROM events_legacy_positions l
 WHERE (e.workspace_id, e.tx_id, e.seq) = (l.workspace_id, l.tx_id, l.seq);

ALTER TABLE events ALTER COLUMN stamp SET NOT NULL;
ALTER TABLE events DROP COLUMN tx_id;
ALTER TABLE events ADD PRIMARY KEY (workspace_id, stamp, seq);
CREATE INDEX events_by_resource ON events (workspace_id, resource_type, resource_id, stamp, seq);
CREATE INDEX events_by_type ON events (workspace_id, type, stamp, seq);
-- A key that may read some resource types only reads one range per type, merged: its page costs
-- the same however many events of the other types lie in between (src/modules/events).
CREATE INDEX events_by_resource_type ON events (workspace_id, resource_type, stamp, seq);

-- An event id holds the sequence in 48 bits; it only orders the events of one stamp.
SELECT setval('events_seq', 1, false) WHERE (SELECT last_value FROM events_seq) >= 281474976710655;
ALTER SEQUENCE events_seq MAXVALUE 281474976710655;

-- What retention deleted, as a position (stamp, seq); legacy_tx_id and legacy_seq keep a purge
-- recorded as (tx_id, seq), so an old position before it is still answered 410.
ALTER TABLE events_purged RENAME COLUMN tx_id TO legacy_tx_id;
ALTER TABLE events_purged RENAME COLUMN seq TO legacy_seq;
ALTER TABLE events_purged ALTER COLUMN legacy_tx_id DROP NOT NULL, ALTER COLUMN legacy_seq DROP NOT NULL;
ALTER TABLE events_purged ADD COLUMN stamp bigint NOT NULL DEFAULT 0, ADD COLUMN seq bigint NOT NULL DEFAULT 0;

-- Every workspace has a clock (the head of its feed reads it).
INSERT INTO workspace_clocks (workspace_id, last_stamp)
SELECT id, now() FROM workspaces ON CONFLICT (workspace_id) DO NOTHING;
