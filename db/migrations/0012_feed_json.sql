-- Each event as the feed lists it, less its id: written once, when the event is written or its data
-- erased, by the trigger events_feed_json (db/code/04_events_feed.sql), and spliced into the pages
-- of GET /v2/events.
ALTER TABLE events ADD COLUMN feed_json text;

-- Events already stored: the same text, written out here (a migration calls none of the database's
-- functions): type, resource type and id, occurred_at as the API prints instants, the request id,
-- and the scalar properties of the event's data in the order of its resource table's columns, which
-- is the order of the resource's schema (every table is its type's plural: contact -> contacts).
-- The data of these events holds the public properties only: the representation functions wrote it.
UPDATE events e SET feed_json =
  '{"type":' || to_json(e.type)::text || ',"resource_type":' || to_json(e.resource_type)::text ||
  ',"resource_id":' || to_json(e.resource_id)::text ||
  ',"occurred_at":' || to_json(to_char(e.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text ||
  ',"request_id":' || coalesce(to_json(e.request_id)::text, 'null') ||
  ',"data":' || (
    SELECT '{' || coalesce(string_agg(to_json(d.key)::text || ':' || d.value::text, ',' ORDER BY a.attnum), '') || '}'
      FROM jsonb_each(e.data) AS d
      JOIN pg_attribute a ON a.attrelid = to_regclass(e.resource_type || 's') AND a.attname = d.key AND a.attnum > 0
     WHERE jsonb_typeof(d.value) IN ('string', 'number', 'boolean', 'null')) || '}';

ALTER TABLE events ALTER COLUMN feed_json SET NOT NULL;
