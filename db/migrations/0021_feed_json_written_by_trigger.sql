-- events.feed_json is a plain column, written by the trigger events_feed_json
-- (db/code/04_events_feed.sql). Where it is a generated column (a database that applied
-- 0012_feed_json.sql as first released), it becomes a plain one and keeps every stored value: no
-- table may depend on a function of db/code, which migrate replaces whenever those files change.
ALTER TABLE events ALTER COLUMN feed_json DROP EXPRESSION IF EXISTS;
