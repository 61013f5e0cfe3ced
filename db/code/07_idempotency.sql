-- The start of an idempotent write in one round trip: take the key's transaction-scoped advisory
-- lock (without waiting), name the request for the events the write causes, and read the key's
-- stored answer (src/infra/idempotency-store.ts).
--
-- A function rather than one statement, because of the order: the read must see every answer that
-- committed before the lock was granted. One statement reads with the snapshot taken as it starts,
-- before the lock: a request holding the key could commit and release it in between, and this one
-- would get the lock, see no answer, and write a second time. In READ COMMITTED a VOLATILE function
-- takes a new snapshot for each statement it runs, so its SELECT comes after the lock.
--
-- The read is by primary key, always: a session caches its plan, and one made while the table was
-- nearly empty (a new installation; the expired keys just purged and the table analyzed) would
-- otherwise scan the whole table on every write as it fills again (test/idempotency-plans.test.ts).
CREATE OR REPLACE FUNCTION idempotency_claim(p_workspace_id uuid, p_key text, p_request_id text)
RETURNS TABLE (locked boolean, request_sha256 bytea, status_code smallint, response_body text, erased boolean)
LANGUAGE plpgsql VOLATILE SET enable_seqscan = off AS $$
#variable_conflict use_column
BEGIN
  -- The lock key of (workspace, Idempotency-Key): processes of every release take the same one.
  locked := pg_try_advisory_xact_lock(hashtextextended(p_workspace_id::text || ':' || p_key, 0));
  PERFORM set_config('app.request_id', p_request_id, true);
  SELECT k.request_sha256, k.status_code, k.response_body, k.erased
    INTO request_sha256, status_code, response_body, erased
    FROM idempotency_keys k
   WHERE k.workspace_id = p_workspace_id AND k.key = p_key AND k.expires_at > now();
  RETURN NEXT;
END
$$;
