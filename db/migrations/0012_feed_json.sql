-- Each event as the feed lists it, less its id: written once, when the event is written or its data
-- erased, by the trigger events_feed_json (db/code/04_events_feed.sql), and spliced into the pages
-- of GET /v2/events.
ALTER TABLE events ADD COLUMN feed_json text;

-- Events already stored: the same text, written out here (a migration calls none of the database's
-- functions): type, resource type and id, occurred_at as the API prints instants, the request id,
-- and the public properties of the event's data in schema order, scalars only
-- (db/code/02_representations.sql).
UPDATE events e SET feed_json =
  '{"type":' || to_json(e.type)::text || ',"resource_type":' || to_json(e.resource_type)::text ||
  ',"resource_id":' || to_json(e.resource_id)::text ||
  ',"occurred_at":' || to_json(to_char(e.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text ||
  ',"request_id":' || coalesce(to_json(e.request_id)::text, 'null') ||
  ',"data":' || (
    SELECT '{' || coalesce(string_agg(to_json(p)::text || ':' || (e.data -> p)::text, ',' ORDER BY i), '') || '}'
      FROM unnest(CASE e.resource_type
        WHEN 'workspace' THEN ARRAY['id', 'name', 'status', 'timezone', 'created_at', 'updated_at']
        WHEN 'contact' THEN ARRAY['id', 'external_id', 'name', 'company_name', 'email', 'phone', 'whatsapp',
                                  'origin', 'status', 'created_at', 'updated_at']
        WHEN 'pipeline_stage' THEN ARRAY['id', 'name', 'position', 'created_at', 'updated_at']
        WHEN 'appointment' THEN ARRAY['id', 'contact_id', 'starts_at', 'ends_at', 'timezone', 'status', 'source',
                                      'created_at', 'updated_at']
        WHEN 'catalog_item' THEN ARRAY['id', 'kind', 'name', 'description', 'price_amount', 'currency',
                                       'duration_minutes', 'active', 'created_at', 'updated_at']
        WHEN 'conversation' THEN ARRAY['id', 'contact_id', 'channel', 'status', 'last_message_at', 'created_at',
                                       'updated_at']
        WHEN 'message' THEN ARRAY['id', 'conversation_id', 'contact_id', 'direction', 'kind', 'text', 'sent_at',
                                  'created_at', 'updated_at']
        WHEN 'automation' THEN ARRAY['id', 'name', 'status', 'trigger_kind', 'last_run_at', 'run_count',
                                     'success_count', 'failure_count', 'created_at', 'updated_at']
        ELSE ARRAY['id']
      END) WITH ORDINALITY AS t(p, i)
     WHERE jsonb_typeof(e.data -> p) IN ('string', 'number', 'boolean', 'null')) || '}';

ALTER TABLE events ALTER COLUMN feed_json SET NOT NULL;
