-- The events feed, private to its workspace: positions in the workspace's own commit order, and
-- no content left behind by a deletion.
--
-- Positions. An event used to be placed by its transaction's id (a counter shared by every
-- workspace of the database) and shown once no older transaction was running anywhere: its id
-- told a workspace how many transactions all the others had made between two of its own events,
-- and one workspace's long transaction held back every other workspace's feed. Now an event is
-- placed by the stamp its transaction took from the workspace's sync clock (0005), in
-- milliseconds, with the sequence ordering the events of one stamp. The clock is held from the
-- first stamp until commit, so, per workspace:
--   * a transaction that has not committed yet will sort after every event a reader can see;
--   * an event is visible as soon as its transaction commits, and the feed, read in (stamp, seq)
--     order, never skips one: what a reader has not seen yet always comes after what it has.
-- Every change that writes an event therefore takes the clock: deletions and workspace updates
-- too, not only the stamped inserts and updates. The API shows positions encrypted (event ids),
-- so even the stamps stay inside (src/modules/events/event-ids.ts).
--
-- Erasure. When a resource is deleted, its earlier events keep their place, type and ids, and
-- their data becomes the deletion's tombstone ({id}, and for a contact {id, external_id}): a
-- follower still applies them in order, and nothing of the deleted record stays readable.

ALTER TABLE events ADD COLUMN stamp bigint;

-- Events written before: numbered 1, 2, 3... per workspace in their old order (transaction id,
-- sequence). As stamps these are milliseconds of 1970, before anything the clock gives, so every
-- new event follows them. The old positions map onto the new ones, so ids and head positions that
-- followers kept from before (evt_<transaction>_<sequence>) still resume exactly where they were.
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

-- What retention deleted, in the new positions; the old columns keep what was deleted before, to
-- answer an old position with 410 as before.
ALTER TABLE events_purged RENAME COLUMN tx_id TO legacy_tx_id;
ALTER TABLE events_purged RENAME COLUMN seq TO legacy_seq;
ALTER TABLE events_purged ALTER COLUMN legacy_tx_id DROP NOT NULL, ALTER COLUMN legacy_seq DROP NOT NULL;
ALTER TABLE events_purged ADD COLUMN stamp bigint NOT NULL DEFAULT 0, ADD COLUMN seq bigint NOT NULL DEFAULT 0;

-- Every workspace has a clock (the head of its feed reads it).
INSERT INTO workspace_clocks (workspace_id, last_stamp)
SELECT id, now() FROM workspaces ON CONFLICT (workspace_id) DO NOTHING;

-- A sync stamp as a feed position: milliseconds since 1970.
CREATE FUNCTION stamp_position(stamp timestamptz) RETURNS bigint LANGUAGE sql IMMUTABLE
  AS $$ SELECT (extract(epoch FROM stamp) * 1000)::bigint $$;

DROP FUNCTION emit_event(uuid, text, text, text, jsonb);
-- Called by the row triggers of every resource (0002). The request id is set (transaction-local)
-- by the API, so changes made through it can be traced; other writers leave it empty.
CREATE FUNCTION emit_event(ws uuid, kind text, op text, resource text, representation jsonb) RETURNS void
  LANGUAGE plpgsql
  AS $$
DECLARE
  content jsonb := coalesce(representation, jsonb_build_object('id', resource));
BEGIN
  -- A workspace being deleted takes its resources and its events with it: nothing to record.
  IF NOT EXISTS (SELECT 1 FROM workspaces w WHERE w.id = ws) THEN
    RETURN;
  END IF;
  IF op = 'DELETE' THEN
    -- Erasure: the resource's earlier events now say no more than its tombstone.
    UPDATE events e SET data = content
     WHERE e.workspace_id = ws AND e.resource_type = kind AND e.resource_id = resource AND e.data <> content;
  END IF;
  INSERT INTO events (workspace_id, stamp, type, resource_type, resource_id, request_id, data)
  VALUES (ws, stamp_position(sync_stamp(ws)),
          kind || CASE op WHEN 'INSERT' THEN '.created' WHEN 'UPDATE' THEN '.updated' ELSE '.deleted' END,
          kind, resource, nullif(current_setting('app.request_id', true), ''), content);
END
$$;
