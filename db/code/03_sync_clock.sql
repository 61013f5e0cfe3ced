-- updated_at: when a public property of a row last changed, in the workspace's commit order.
--
-- The sync clock. A list read with ?updated_after=T must never be passed by a change that becomes
-- visible later with a stamp at or before T. Stamping with the clock at the change does not promise
-- that: a transaction stamps 10:00:00.100, another stamps 10:00:00.105 and commits first, a reader
-- stores .105 as its position, then the first commits with .100, behind the reader, never to be seen.
--
-- So every stamp of a workspace comes from one row, workspace_clocks, which the stamping transaction
-- updates (so it holds that row's lock until it commits or rolls back). A stamp is the later of the
-- clock and the last stamp issued plus one millisecond. Hence, per workspace:
--   * stamps of different transactions are strictly increasing in the order they took the clock;
--   * the clock is held until commit, so that order is also the order in which changes become
--     visible: every change a reader cannot see yet will carry a stamp later than every stamp it
--     can see. A reader's position (the updated_at of the last row it read) is never passed.
--   * no two transactions share a stamp, so a tie at a position is always one transaction's rows,
--     which become visible together.
-- The price: the writes of one workspace commit one at a time from their first stamp on
-- (docs/sync.md). Edits of internal data alone take no stamp and are not serialized.
--
-- The events feed places its events by the same stamps (04_events_feed.sql).

-- The stamp of the calling transaction for workspace `ws`, later than `above`. The first call of a
-- transaction takes the clock (and its lock); later calls reuse the stamp, cached transaction-locally
-- in app.sync_stamp, so a transaction that changes many rows takes the clock once. A stamp that
-- would not be later than `above` (a row changed twice in one transaction) takes a new one, so the
-- clock always holds the latest stamp issued.
CREATE OR REPLACE FUNCTION sync_stamp(ws uuid, above timestamptz DEFAULT '-infinity') RETURNS timestamptz
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
  -- The clock's row lock is taken behind a transaction-scoped advisory lock of the workspace (seed 2,
  -- apart from the external ids' seed 1 and the Idempotency-Keys' seed 0), held as long. Writers
  -- waiting for the clock then queue in the lock manager, and a commit wakes the next of them
  -- alone, rather than waiters on the row each retrying its insert when the row is released
  -- (measured: bench/results/2026-11-29-batch-round-trip.md).
  PERFORM pg_advisory_xact_lock(hashtextextended(ws::text, 2));
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

-- The stamp of a row's change: every insert takes a stamp; an update takes one only when a column
-- other than the table's internal ones changed (edits of internal data neither move updated_at
-- nor produce events). Stamps written by the caller are overwritten: no writer can place a row
-- behind a reader.
--
-- stamp_trigger(table, internal columns) creates the table's trigger <table>_stamp and its
-- function <table>_stamp_change(), which compares the table's other columns one by one, as they
-- are when the code is applied (after every migration, db/README.md). A comparison of the rows as
-- jsonb, less the internal columns, would serve every table, at about 9 µs a row against 0.4.
CREATE OR REPLACE FUNCTION stamp_trigger(tbl regclass, internal text[]) RETURNS void
  LANGUAGE plpgsql
  AS $generate$
DECLARE
  compared text[];
  table_name text := (SELECT relname FROM pg_class WHERE oid = tbl);
  unknown text := (SELECT string_agg(i, ', ') FROM unnest(internal) i
                    WHERE NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = tbl AND attname = i AND NOT attisdropped));
BEGIN
  IF unknown IS NOT NULL THEN
    RAISE EXCEPTION 'stamp_trigger(%): no column %', tbl, unknown;
  END IF;
  SELECT array_agg(quote_ident(attname) ORDER BY attnum) INTO compared
    FROM pg_attribute
   WHERE attrelid = tbl AND attnum > 0 AND NOT attisdropped AND attname <> ALL (internal || '{updated_at}'::text[]);
  EXECUTE format($f$
    CREATE OR REPLACE FUNCTION %I() RETURNS trigger
      LANGUAGE plpgsql
      AS $body$
    BEGIN
      IF TG_OP = 'INSERT' THEN
        NEW.updated_at := sync_stamp(NEW.workspace_id);
        -- created_at is the stamp too, unless the writer names an earlier instant (an import of a
        -- record made elsewhere before); never later than updated_at.
        IF NEW.created_at >= now()::timestamptz(3) THEN
          NEW.created_at := NEW.updated_at;
        END IF;
      ELSIF ROW(%s) IS DISTINCT FROM ROW(%s) THEN
        NEW.updated_at := sync_stamp(NEW.workspace_id, OLD.updated_at);
      ELSE
        NEW.updated_at := OLD.updated_at;
      END IF;
      RETURN NEW;
    END
    $body$
  $f$,
    table_name || '_stamp_change',
    (SELECT string_agg('NEW.' || c, ', ') FROM unnest(compared) c),
    (SELECT string_agg('OLD.' || c, ', ') FROM unnest(compared) c));
  EXECUTE format('CREATE OR REPLACE TRIGGER %I BEFORE INSERT OR UPDATE ON %s FOR EACH ROW EXECUTE FUNCTION %I()',
                 table_name || '_stamp', tbl, table_name || '_stamp_change');
END
$generate$;

-- Messages are listed by created_at (?created_after=): theirs is the stamp of the insert.
CREATE OR REPLACE FUNCTION stamp_message_creation() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
BEGIN
  NEW.created_at := NEW.updated_at;
  RETURN NEW;
END
$$;

-- The second argument names each table's internal columns: a change of those alone is no change.
SELECT stamp_trigger('contacts', '{notes,ai_memory}');
SELECT stamp_trigger('appointments', '{internal_notes}');
SELECT stamp_trigger('pipeline_stages', '{internal_notes}');
SELECT stamp_trigger('catalog_items', '{private_notes,internal_metadata}');
SELECT stamp_trigger('conversations', '{provider,provider_conversation_id,provider_payload,private_url}');
SELECT stamp_trigger('messages', '{provider_message_id,provider_payload,media_private_url}');
-- Fires after messages_stamp (BEFORE triggers of one event fire in name order).
CREATE OR REPLACE TRIGGER messages_stamp_created BEFORE INSERT ON messages FOR EACH ROW
  EXECUTE FUNCTION stamp_message_creation();
SELECT stamp_trigger('automations', '{rules,conditions,actions}');

-- touch_updated_at(internal columns...): updated_at of a row outside the sync clock (a workspace
-- itself, a webhook endpoint), moved only when a column other than the named internal ones changes.
CREATE OR REPLACE FUNCTION touch_updated_at() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
BEGIN
  IF (to_jsonb(NEW) - TG_ARGV - 'updated_at') IS DISTINCT FROM (to_jsonb(OLD) - TG_ARGV - 'updated_at') THEN
    -- clock_timestamp rather than now(): a long transaction must not stamp its changes with its
    -- start time, which a client syncing with updated_after may already have paged past.
    NEW.updated_at := greatest(clock_timestamp(), OLD.updated_at + interval '1 millisecond');
  ELSE
    NEW.updated_at := OLD.updated_at;
  END IF;
  RETURN NEW;
END
$$;

CREATE OR REPLACE TRIGGER workspaces_touch BEFORE UPDATE ON workspaces FOR EACH ROW
  EXECUTE FUNCTION touch_updated_at('billing_plan', 'billing_email', 'internal_notes');
CREATE OR REPLACE TRIGGER webhook_endpoints_touch BEFORE UPDATE ON webhook_endpoints FOR EACH ROW
  EXECUTE FUNCTION touch_updated_at();
