-- The public representation of each resource type: the only shapes the events feed can carry, with
-- the same properties, names, order and formats as the API's schemas. Nothing but these functions
-- names a resource's public columns for the feed; the internal columns beside them (notes, AI
-- memory, provider data, private URLs, automation rules, billing, credentials) never appear here.
-- test/events-feed-json.test.ts holds the lists of api_properties to the TypeBox schemas.

CREATE OR REPLACE FUNCTION api_workspace_json(w workspaces) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('id', w.id, 'name', w.name, 'status', w.status, 'timezone', w.timezone,
    'created_at', api_time(w.created_at), 'updated_at', api_time(w.updated_at)) $$;

CREATE OR REPLACE FUNCTION api_contact_json(c contacts) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('id', c.id, 'external_id', c.external_id, 'name', c.name,
    'company_name', c.company_name, 'email', c.email, 'phone', c.phone, 'whatsapp', c.whatsapp,
    'origin', c.origin, 'status', c.status, 'created_at', api_time(c.created_at),
    'updated_at', api_time(c.updated_at)) $$;

CREATE OR REPLACE FUNCTION api_appointment_json(a appointments) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('id', a.id, 'contact_id', a.contact_id, 'starts_at', api_time(a.starts_at),
    'ends_at', api_time(a.ends_at), 'timezone', a.timezone, 'status', a.status, 'source', a.source,
    'created_at', api_time(a.created_at), 'updated_at', api_time(a.updated_at)) $$;

CREATE OR REPLACE FUNCTION api_pipeline_stage_json(s pipeline_stages) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('id', s.id, 'name', s.name, 'position', s.position,
    'created_at', api_time(s.created_at), 'updated_at', api_time(s.updated_at)) $$;

CREATE OR REPLACE FUNCTION api_catalog_item_json(i catalog_items) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('id', i.id, 'kind', i.kind, 'name', i.name, 'description', i.description,
    'price_amount', i.price_amount, 'currency', i.currency, 'duration_minutes', i.duration_minutes,
    'active', i.active, 'created_at', api_time(i.created_at), 'updated_at', api_time(i.updated_at)) $$;

CREATE OR REPLACE FUNCTION api_conversation_json(c conversations) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('id', c.id, 'contact_id', c.contact_id, 'channel', c.channel, 'status', c.status,
    'last_message_at', api_time(c.last_message_at), 'created_at', api_time(c.created_at),
    'updated_at', api_time(c.updated_at)) $$;

CREATE OR REPLACE FUNCTION api_message_json(m messages) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('id', m.id, 'conversation_id', m.conversation_id, 'contact_id', m.contact_id,
    'direction', m.direction, 'kind', m.kind, 'text', m.text, 'sent_at', api_time(m.sent_at),
    'created_at', api_time(m.created_at), 'updated_at', api_time(m.updated_at)) $$;

CREATE OR REPLACE FUNCTION api_automation_json(a automations) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('id', a.id, 'name', a.name, 'status', a.status, 'trigger_kind', a.trigger_kind,
    'last_run_at', api_time(a.last_run_at), 'run_count', a.run_count, 'success_count', a.success_count,
    'failure_count', a.failure_count, 'created_at', api_time(a.created_at),
    'updated_at', api_time(a.updated_at)) $$;

-- The public properties of each resource type, in the order of its API schema, which is the order
-- GET writes them in. Event text keeps these and nothing else (api_public_json): a second line of
-- defence behind the api_<type>_json functions above, whatever they return.
CREATE OR REPLACE FUNCTION api_properties(kind text) RETURNS text[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
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

-- A representation as compact JSON text: the resource type's public properties that `data` has, in
-- schema order. Every public property is a scalar, which jsonb prints compactly and escapes as
-- JSON.stringify does, so the text is byte for byte what GET writes for the same values; an object
-- or array under a public name (no representation writes one) is left out, not shown.
CREATE OR REPLACE FUNCTION api_public_json(kind text, data jsonb) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT '{' || coalesce(string_agg(to_json(p)::text || ':' || (data -> p)::text, ',' ORDER BY i), '') || '}'
    FROM unnest(api_properties(kind)) WITH ORDINALITY AS t(p, i)
   WHERE jsonb_typeof(data -> p) IN ('string', 'number', 'boolean', 'null') $$;
