-- Delivery processes LISTEN on the channel webhook_work: a notification names a workspace that has
-- webhook deliveries to make now. PostgreSQL sends notifications when the transaction commits, to
-- every process, so a committed change is delivered at once by whichever process is free instead
-- of at the next poll. Workspaces without an endpoint send none; one transaction sends one per
-- workspace, however many events it writes (identical notifications of a transaction are folded).
CREATE OR REPLACE FUNCTION wake_for_new_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('webhook_work', e.workspace_id::text)
     FROM (SELECT DISTINCT n.workspace_id FROM new_events n) e
    WHERE EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.workspace_id = e.workspace_id);
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION wake_for_endpoint() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('webhook_work', NEW.workspace_id::text);
  RETURN NULL;
END $$;

-- the new events of a statement (once per statement, not per event)
CREATE OR REPLACE TRIGGER events_wake_webhook_delivery AFTER INSERT ON events REFERENCING NEW TABLE AS new_events
  FOR EACH STATEMENT EXECUTE FUNCTION wake_for_new_events();

-- an endpoint enabled (its pending deliveries are due at once) or replayed (its position moved back)
CREATE OR REPLACE TRIGGER webhook_endpoints_wake_delivery
  AFTER UPDATE OF status, position_stamp, position_seq ON webhook_endpoints
  FOR EACH ROW
  WHEN (NEW.status = 'active'
        AND (OLD.status <> 'active'
             OR (NEW.position_stamp, NEW.position_seq) < (OLD.position_stamp, OLD.position_seq)))
  EXECUTE FUNCTION wake_for_endpoint();
