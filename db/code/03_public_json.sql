-- The representation functions api_<type>_json(row), api_<type>_text(row) and api_properties(type) are generated from the
-- resources' schemas (src/modules/resources.ts, src/infra/representation.ts) and applied by migrate
-- before this file: the public properties of each resource are declared once, in its schema.

-- A representation as compact JSON text: the resource type's public properties that `data` has, in
-- schema order. Every public property is a scalar, which jsonb prints compactly and escapes as
-- JSON.stringify does, so the text is byte for byte what GET writes for the same values; an object
-- or array under a public name (no representation writes one) is left out, not shown.
CREATE OR REPLACE FUNCTION api_public_json(kind text, data jsonb) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT '{' || coalesce(string_agg(to_json(p)::text || ':' || (data -> p)::text, ',' ORDER BY i), '') || '}'
    FROM unnest(api_properties(kind)) WITH ORDINALITY AS t(p, i)
   WHERE jsonb_typeof(data -> p) IN ('string', 'number', 'boolean', 'null') $$;
