-- The sync clock: updated_at (and a message's created_at) in commit order, per workspace.
--
-- A list read with ?updated_after=T must never be passed by a change that becomes visible later
-- with a stamp at or before T. Stamping with the clock at the change does not promise that: a
-- transaction stamps 10:00:00.100, another stamps 10:00:00.105 and commits first, a reader stores
-- .105 as its position, then the first commits with .100, behind the reader, never to be seen.
--
-- Here every stamp of a workspace comes from one row, workspace_clocks, which the stamping
-- transaction updates (so it holds that row's lock until it commits or rolls back). A stamp is
-- the later of the clock and the last stamp issued plus one millisecond. Hence, per workspace:
--   * stamps of different transactions are strictly increasing in the order they took the clock;
--   * the clock is held until commit, so that order is also the order in which changes become
--     visible: every change a reader cannot see yet will carry a stamp later than every stamp it
--     can see. A reader's position (the updated_at of the last row it read) is never passed.
--   * no two transactions share a stamp, so a tie at a position is always one transaction's rows,
--     which become visible together.
-- The price: the writes of one workspace commit one at a time from their first stamp on
-- (docs/sync.md). Edits of internal data alone take no stamp and are not serialized.

CREATE TABLE workspace_clocks (
  workspace_id uuid PRIMARY KEY REFERENCES workspaces (id) ON DELETE CASCADE,
  last_stamp timestamptz(3) NOT NULL
) WITH (fillfactor = 50); -- one row updated per write transaction: room for HOT updates

-- The stamp of the calling transaction for workspace `ws`, later than `above`. The first call of a
-- transaction takes the clock (and its lock); later calls reuse the stamp, cached transaction-locally
-- in app.sync_stamp, so a transaction that changes many rows takes the clock once. A stamp that
-- would not be later than `above` (a row changed twice in one transaction) takes a new one, so the
-- clock always holds the latest stamp issued.
CREATE FUNCTION sync_stamp(ws uuid, above timestamptz DEFAULT '-infinity') RETURNS timestamptz
  LANGUAGE plpgsql
  AS $$
DECLARE
  cached text := current_setting('app.sync_stamp', true);
  stamp timestamptz;
BEGIN
  IF cached LIKE ws::text || '/%' THEN
    stamp := substr(cached, 38)::timestamptz;
    IF stamp > above THEN
      RETURN stamp;
    END IF;
  END IF;
  INSERT INTO workspace_clocks AS c (workspace_id, last_stamp)
  VALUES (ws, greatest(clock_timestamp(), above + interval '1 millisecond'))
  ON CONFLICT (workspace_id) DO UPDATE
    SET last_stamp = greatest(clock_timestamp(), c.last_stamp + interval '1 millisecond',
                              above + interval '1 millisecond')
  RETURNING last_stamp INTO stamp;
  PERFORM set_config('app.sync_stamp', ws::text || '/' || stamp::text, true);
  RETURN stamp;
END
$$;

-- stamp_change(internal columns...): every insert takes a stamp; an update takes one only when a
-- public column changed (edits of internal data neither move updated_at nor produce events).
-- Stamps written by the caller are overwritten: no writer can place a row behind a reader.
CREATE FUNCTION stamp_change() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    NEW.updated_at := sync_stamp(NEW.workspace_id);
    -- created_at is the stamp too, unless the writer names an earlier instant (an import of a
    -- record made elsewhere before); never later than updated_at.
    IF NEW.created_at >= now()::timestamptz(3) THEN
      NEW.created_at := NEW.updated_at;
    END IF;
  ELSIF (to_jsonb(NEW) - TG_ARGV - 'updated_at') IS DISTINCT FROM (to_jsonb(OLD) - TG_ARGV - 'updated_at') THEN
    NEW.updated_at := sync_stamp(NEW.workspace_id, OLD.updated_at);
  ELSE
    NEW.updated_at := OLD.updated_at;
  END IF;
  RETURN NEW;
END
$$;

-- Messages are listed by created_at (?created_after=): theirs is the stamp of the insert.
CREATE FUNCTION stamp_message_creation() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
BEGIN
  NEW.created_at := NEW.updated_at;
  RETURN NEW;
END
$$;

DROP TRIGGER contacts_touch ON contacts;
CREATE TRIGGER contacts_stamp BEFORE INSERT OR UPDATE ON contacts FOR EACH ROW
  EXECUTE FUNCTION stamp_change('notes', 'ai_memory');

DROP TRIGGER appointments_touch ON appointments;
CREATE TRIGGER appointments_stamp BEFORE INSERT OR UPDATE ON appointments FOR EACH ROW
  EXECUTE FUNCTION stamp_change('internal_notes');

DROP TRIGGER pipeline_stages_touch ON pipeline_stages;
CREATE TRIGGER pipeline_stages_stamp BEFORE INSERT OR UPDATE ON pipeline_stages FOR EACH ROW
  EXECUTE FUNCTION stamp_change('internal_notes');

DROP TRIGGER catalog_items_touch ON catalog_items;
CREATE TRIGGER catalog_items_stamp BEFORE INSERT OR UPDATE ON catalog_items FOR EACH ROW
  EXECUTE FUNCTION stamp_change('private_notes', 'internal_metadata');

DROP TRIGGER conversations_touch ON conversations;
CREATE TRIGGER conversations_stamp BEFORE INSERT OR UPDATE ON conversations FOR EACH ROW
  EXECUTE FUNCTION stamp_change('provider', 'provider_conversation_id', 'provider_payload', 'private_url');

DROP TRIGGER messages_touch ON messages;
CREATE TRIGGER messages_stamp BEFORE INSERT OR UPDATE ON messages FOR EACH ROW
  EXECUTE FUNCTION stamp_change('provider_message_id', 'provider_payload', 'media_private_url');
-- Fires after messages_stamp (BEFORE triggers fire in name order).
CREATE TRIGGER messages_stamp_created BEFORE INSERT ON messages FOR EACH ROW
  EXECUTE FUNCTION stamp_message_creation();

DROP TRIGGER automations_touch ON automations;
CREATE TRIGGER automations_stamp BEFORE INSERT OR UPDATE ON automations FOR EACH ROW
  EXECUTE FUNCTION stamp_change('rules', 'conditions', 'actions');

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
