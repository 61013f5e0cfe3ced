-- Admission of requests without Redis (src/infra/admission-store.ts): rate-limit counts in the
-- UNLOGGED table rate_limit_buckets, requests in flight per key and process in the UNLOGGED table
-- concurrency_places.

-- For the process p_process: first sets how many places it holds of each bucket p_held_buckets[i]
-- to p_held[i] (its own count, which it sends for every bucket it gave places back to or takes
-- places of in this call: a call of it whose answer was lost is set right this way); then admits
-- each group i of p_sizes[i] requests that ask the same: their GCRA steps on bucket p_buckets[i]
-- (interval p_intervals[i], window p_windows[i], on the database's clock) while they pass, and
-- when p_place_buckets[i] is not null, one of p_place_limits[i] places of that bucket for each of
-- those that passed while places are free; in such a group only those that took a place are
-- counted (a request refused for want of one does nothing). Answers one row per group: its index,
-- the clock, the bucket's TAT before the group, how many of the group the count allowed (the first
-- ones) and how many of those took a place (the first ones; 0 when none was asked for).
--
-- A process's row counts until p_lease_ms after it was last written: a live process writes its
-- rows again every third of the lease, so every place it holds is still counted, and the places
-- of a process that died stop counting on their own.
--
-- Calls from several processes run at once. So that two calls never wait on each other in a cycle,
-- each takes, before locking any row, the advisory locks of every places bucket it touches, in one
-- order; then it steps the rate-limit buckets in order of bucket (each bucket's groups in their
-- order in the call). The advisory lock puts the takers of a bucket's places in line; each
-- statement after it reads afresh (READ COMMITTED, a volatile function), so it counts every place
-- taken before it.
CREATE OR REPLACE FUNCTION admit_requests(
  p_process text, p_lease_ms integer, p_held_buckets text[], p_held integer[],
  p_buckets text[], p_sizes integer[], p_intervals float8[], p_windows float8[],
  p_place_buckets text[], p_place_limits integer[])
RETURNS TABLE (item integer, now_ms float8, prior_tat float8, allowed integer, placed integer)
LANGUAGE plpgsql AS $$
DECLARE
  clock_ms float8 := extract(epoch FROM clock_timestamp()) * 1000;
  i integer;
  tat float8;
  bound float8;
  held_now integer;
BEGIN
  PERFORM pg_advisory_xact_lock(h)
     FROM (SELECT DISTINCT hashtextextended('concurrency:' || b, 0) AS h
             FROM unnest(p_place_buckets || p_held_buckets) AS b
            WHERE b IS NOT NULL) AS locks
    ORDER BY h;
  DELETE FROM concurrency_places p
   USING unnest(p_held_buckets, p_held) AS mine(bucket, held)
   WHERE mine.held = 0 AND p.bucket = mine.bucket AND p.process = p_process;
  INSERT INTO concurrency_places AS p (bucket, process, held, expires_at_ms)
  SELECT mine.bucket, p_process, mine.held, clock_ms + p_lease_ms
    FROM unnest(p_held_buckets, p_held) AS mine(bucket, held)
   WHERE mine.held > 0
  ON CONFLICT (bucket, process) DO UPDATE SET held = EXCLUDED.held, expires_at_ms = EXCLUDED.expires_at_ms;
  FOR i IN SELECT s.i FROM generate_subscripts(p_buckets, 1) AS s(i) ORDER BY p_buckets[s.i], s.i LOOP
    SELECT greatest(b.tat_ms, clock_ms) INTO tat FROM rate_limit_buckets b WHERE b.bucket = p_buckets[i] FOR UPDATE;
    IF NOT FOUND THEN
      -- A new bucket is full: its TAT is now. Another call may be creating it too.
      INSERT INTO rate_limit_buckets (bucket, tat_ms) VALUES (p_buckets[i], clock_ms) ON CONFLICT (bucket) DO NOTHING;
      SELECT greatest(b.tat_ms, clock_ms) INTO tat FROM rate_limit_buckets b WHERE b.bucket = p_buckets[i] FOR UPDATE;
    END IF;
    item := i;
    now_ms := clock_ms;
    prior_tat := tat;
    allowed := 0;
    placed := 0;
    bound := p_windows[i] + least(1, p_intervals[i] / 2);
    WHILE allowed < p_sizes[i] AND tat + p_intervals[i] - clock_ms <= bound LOOP
      tat := tat + p_intervals[i];
      allowed := allowed + 1;
    END LOOP;
    IF allowed > 0 THEN
      IF p_place_buckets[i] IS NOT NULL THEN
        SELECT coalesce(sum(p.held), 0) INTO held_now FROM concurrency_places p
         WHERE p.bucket = p_place_buckets[i] AND p.expires_at_ms >= clock_ms;
        placed := least(allowed, greatest(0, p_place_limits[i] - held_now));
        IF placed > 0 THEN
          INSERT INTO concurrency_places AS p (bucket, process, held, expires_at_ms)
          VALUES (p_place_buckets[i], p_process, placed, clock_ms + p_lease_ms)
          ON CONFLICT (bucket, process) DO UPDATE
            SET held = CASE WHEN p.expires_at_ms < clock_ms THEN EXCLUDED.held ELSE p.held + EXCLUDED.held END,
                expires_at_ms = EXCLUDED.expires_at_ms;
        END IF;
        -- Only those that took a place count: a request refused for want of one does nothing.
        tat := prior_tat;
        FOR k IN 1 .. placed LOOP
          tat := tat + p_intervals[i];
        END LOOP;
      END IF;
      IF tat > prior_tat THEN
        UPDATE rate_limit_buckets SET tat_ms = tat WHERE bucket = p_buckets[i];
      END IF;
    END IF;
    RETURN NEXT;
  END LOOP;
END
$$;
