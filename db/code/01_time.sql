-- Instants as the API and the events feed write them.

-- An instant as the API prints it: UTC, millisecond precision, e.g. 2024-05-01T09:30:00.000Z. Every
-- timestamp column is timestamptz(3), so this is also exactly what cursors carry and what a
-- JavaScript Date holds: a value never changes on a round trip.
-- STABLE, as to_char is: a SQL function whose body is no more volatile than it is declared is
-- inlined into the query that calls it, where an IMMUTABLE one calling to_char would be run as a
-- function call of its own for every value (every timestamp of every row a list or a write reads).
CREATE OR REPLACE FUNCTION api_time(ts timestamptz) RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
  AS $$ SELECT to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $$;

-- A sync stamp (03_sync_clock.sql) as a feed position: milliseconds since 1970.
CREATE OR REPLACE FUNCTION stamp_position(stamp timestamptz) RETURNS bigint
  LANGUAGE sql IMMUTABLE
  AS $$ SELECT (extract(epoch FROM stamp) * 1000)::bigint $$;
