-- The end of an idempotent write: the key's answer, stored by a function so that it can travel in
-- one message with the transaction's COMMIT (src/infra/idempotency-store.ts).
--
-- Why: a write takes its workspace's sync clock at its first change and holds it until it commits
-- (0005), so the writes of one workspace go through that stretch one at a time, and every round trip
-- inside it is a round trip no other writer of the workspace can use. The answer is stored after
-- the change (it holds the contact the change made), so it was a round trip of its own inside that
-- stretch; sent with the COMMIT it is not. That message uses the simple protocol (several statements,
-- values written inline), which cannot use a prepared statement: the INSERT sits in a PL/pgSQL
-- function, whose plan is kept per session, and the message only calls it.
CREATE FUNCTION idempotency_record(
  p_workspace_id uuid, p_key text, p_request_sha256 bytea, p_status_code smallint, p_response_body text,
  p_resource_id uuid, p_resource_ids uuid[], p_ttl_hours integer)
RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  INSERT INTO idempotency_keys
    (workspace_id, key, request_sha256, status_code, response_body, resource_id, resource_ids, expires_at)
  VALUES (p_workspace_id, p_key, p_request_sha256, p_status_code, p_response_body, p_resource_id, p_resource_ids,
          now() + p_ttl_hours * interval '1 hour')
  -- A record of this key that has expired but is not purged yet: the new answer takes its place.
  ON CONFLICT (workspace_id, key) DO UPDATE
    SET request_sha256 = EXCLUDED.request_sha256, status_code = EXCLUDED.status_code,
        response_body = EXCLUDED.response_body, resource_id = EXCLUDED.resource_id,
        resource_ids = EXCLUDED.resource_ids, erased = false,
        created_at = now(), expires_at = EXCLUDED.expires_at;
END
$$;
