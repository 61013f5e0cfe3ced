-- The events feed: deletion tombstones a keyed mirror can apply, and the position up to which
-- retention has deleted events, so a reader whose position lies before it is told so (410
-- events_expired) instead of silently continuing past the hole.

-- A contact's deletion carries its external_id (public data) beside its id: a CRM that keys its
-- records by external id applies the deletion without keeping a map of our ids.
CREATE OR REPLACE FUNCTION resource_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  kind text := TG_ARGV[0];
  representation jsonb;
BEGIN
  IF TG_OP = 'DELETE' THEN
    representation := jsonb_build_object('id', OLD.id);
    IF kind = 'contact' THEN
      representation := representation || jsonb_build_object('external_id', to_jsonb(OLD) -> 'external_id');
    END IF;
    PERFORM emit_event(OLD.workspace_id, kind, TG_OP, OLD.id::text, representation);
  ELSE
    EXECUTE format('SELECT api_%s_json($1)', kind) INTO representation USING NEW;
    PERFORM emit_event(NEW.workspace_id, kind, TG_OP, NEW.id::text, representation);
  END IF;
  RETURN NULL;
END $$;

-- Per workspace, the latest feed position whose event retention has deleted. A reader resuming
-- after an earlier position has missed at least that event.
CREATE TABLE events_purged (
  workspace_id uuid PRIMARY KEY REFERENCES workspaces (id) ON DELETE CASCADE,
  tx_id xid8 NOT NULL,
  seq bigint NOT NULL,
  purged_at timestamptz(3) NOT NULL DEFAULT now()
);
