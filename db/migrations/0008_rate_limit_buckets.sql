-- Rate-limit buckets shared by several processes without Redis (src/infra/rate-limit-store.ts):
-- per bucket, the GCRA theoretical arrival time in epoch ms. UNLOGGED: no WAL for a count that
-- need not survive a crash (after one, every bucket simply starts full).
CREATE UNLOGGED TABLE rate_limit_buckets (
  bucket text PRIMARY KEY,
  tat_ms float8 NOT NULL
) WITH (fillfactor = 50);
