-- Every workspace has the stages of the default pipeline from its creation on. The contact
-- statuses are these stages: a stage's id is the status value.

CREATE OR REPLACE FUNCTION default_pipeline_stages() RETURNS TABLE (id text, name text, "position" integer)
  LANGUAGE sql IMMUTABLE
  AS $$
  VALUES ('cold_list', 'Cold list', 1), ('prospecting_started', 'Prospecting started', 2), ('talking', 'Talking', 3),
         ('qualified_conversation', 'Qualified conversation', 4), ('nurturing', 'Nurturing', 5),
         ('scheduled', 'Scheduled', 6), ('meeting', 'Meeting', 7), ('post_meeting', 'Post-meeting', 8),
         ('customer_confirmed', 'Customer confirmed', 9), ('lost', 'Lost', 10)
$$;

CREATE OR REPLACE FUNCTION create_default_stages() RETURNS trigger
  LANGUAGE plpgsql
  AS $$
BEGIN
  INSERT INTO pipeline_stages (workspace_id, id, name, position)
  SELECT NEW.id, s.id, s.name, s.position FROM default_pipeline_stages() s;
  RETURN NULL;
END
$$;

-- Named to fire after workspaces_events (AFTER INSERT triggers fire in name order): the stages'
-- events follow the workspace's.
CREATE OR REPLACE TRIGGER workspaces_stages AFTER INSERT ON workspaces FOR EACH ROW
  EXECUTE FUNCTION create_default_stages();
