-- Concurrent requests per key (src/infra/concurrency-store.ts). A key may carry its own limit;
-- null means the deployment's DEFAULT_CONCURRENT_REQUESTS.
ALTER TABLE api_keys ADD COLUMN concurrency_limit integer CHECK (concurrency_limit BETWEEN 1 AND 10000);

-- The requests in flight, shared by several processes without Redis: one row per request, which
-- its process deletes when the request ends. A row whose process died expires with its lease.
-- UNLOGGED: after a crash every key simply starts with nothing in flight. Places are taken by
-- concurrency_acquire (db/code/09_concurrency_limits.sql).
CREATE UNLOGGED TABLE concurrency_leases (
  bucket text NOT NULL,
  holder text NOT NULL,
  expires_at_ms float8 NOT NULL,
  PRIMARY KEY (bucket, holder)
);
