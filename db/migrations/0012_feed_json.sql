-- Each event as the feed lists it, written once when the event is written (or its data erased),
-- not on every read: GET /v2/events splices this text into the page after the event's id, which is
-- encrypted per installation at read time (src/modules/events/event-ids.ts). An event is read far
-- more often than it is written — by every integration that follows the feed, again on every
-- resync — and building its JSON on each read was most of a page's cost.

-- The public properties of each resource type, in the order of its API schema, which is the order
-- GET writes them in (test/events-feed-json.test.ts holds these lists to the schemas). Event data
-- keeps these and nothing else: a second line of defence behind the api_<type>_json functions (0002),
-- whatever they return.
CREATE FUNCTION api_properties(kind text) RETURNS text[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE kind
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
  END $$;

-- Event data as compact JSON text: the resource type's public properties that `data` has, in schema
-- order. Every public property is a scalar, which jsonb prints compactly and escapes as
-- JSON.stringify does, so the text is byte for byte what GET writes for the same values; an object
-- or array under a public name (no representation writes one) is left out, not shown.
CREATE FUNCTION api_public_json(kind text, data jsonb) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT '{' || coalesce(string_agg(to_json(p)::text || ':' || (data -> p)::text, ',' ORDER BY i), '') || '}'
    FROM unnest(api_properties(kind)) WITH ORDINALITY AS t(p, i)
   WHERE jsonb_typeof(data -> p) IN ('string', 'number', 'boolean', 'null') $$;

-- The event as GET /v2/events lists it, less its id, in the order of the schema Event.
CREATE FUNCTION feed_event_json(type text, resource_type text, resource_id text, occurred_at timestamptz,
                                request_id text, data jsonb) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT '{"type":' || to_json(type)::text || ',"resource_type":' || to_json(resource_type)::text ||
         ',"resource_id":' || to_json(resource_id)::text || ',"occurred_at":' || to_json(api_time(occurred_at))::text ||
         ',"request_id":' || coalesce(to_json(request_id)::text, 'null') ||
         ',"data":' || api_public_json(resource_type, data) || '}' $$;

-- Kept by the database with every insert and with every erasure of `data` (0009): the text cannot
-- say more than the data it was made from. Adding it writes it for the events already stored (a
-- rewrite of the table under an exclusive lock: writes wait for it). A later migration that takes a
-- property out of a public schema must rewrite this column too (UPDATE events SET data = data).
ALTER TABLE events ADD COLUMN feed_json text NOT NULL
  GENERATED ALWAYS AS (feed_event_json(type, resource_type, resource_id, occurred_at, request_id, data)) STORED;
