-- The requests in flight per key without Redis, counted per process: one row per (key, process),
-- holding how many places the process has and until when the row counts. A row per request, as
-- before, was inserted and deleted by every request: the dead rows of one busy key piled up in its
-- index faster than vacuum removed them, and every count of the key read through them. A row per
-- process is updated in place instead (the key columns never change, so PostgreSQL prunes the old
-- versions as it goes). A process that died stops renewing its rows, which then expire.
-- UNLOGGED: after a crash every key simply starts with nothing in flight. Places are taken and
-- given back by admit_requests (db/code/09_admission.sql).
DROP TABLE concurrency_leases;
CREATE UNLOGGED TABLE concurrency_places (
  bucket text NOT NULL,
  process text NOT NULL,
  held integer NOT NULL CHECK (held >= 0),
  expires_at_ms float8 NOT NULL,
  PRIMARY KEY (bucket, process)
);
