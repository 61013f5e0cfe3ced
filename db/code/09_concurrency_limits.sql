-- Concurrent requests per key without Redis (src/infra/concurrency-store.ts), in the UNLOGGED table
-- concurrency_leases.

-- Takes one of `lim` places of `bucket` for `holder`, or answers false when all are taken. The
-- advisory lock puts the takers of one bucket in line; each statement after it reads afresh (READ
-- COMMITTED, a volatile function), so it counts every place the one before it took.
CREATE OR REPLACE FUNCTION concurrency_acquire(p_bucket text, p_holder text, p_limit integer, p_lease_ms integer)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  now_ms float8 := extract(epoch FROM clock_timestamp()) * 1000;
  held integer;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('concurrency:' || p_bucket, 0));
  DELETE FROM concurrency_leases WHERE bucket = p_bucket AND expires_at_ms < now_ms;
  SELECT count(*) INTO held FROM concurrency_leases WHERE bucket = p_bucket;
  IF held >= p_limit THEN
    RETURN false;
  END IF;
  INSERT INTO concurrency_leases (bucket, holder, expires_at_ms) VALUES (p_bucket, p_holder, now_ms + p_lease_ms);
  RETURN true;
END
$$;
