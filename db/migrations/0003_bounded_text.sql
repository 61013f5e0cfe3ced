-- Every text the API returns has a documented maximum length; these checks make the stored data
-- keep the promise, whoever writes it (the API's own bodies are already validated to the same
-- bounds).
ALTER TABLE workspaces ADD CONSTRAINT workspaces_timezone_length CHECK (length(timezone) <= 64);
ALTER TABLE appointments
  ADD CONSTRAINT appointments_timezone_length CHECK (length(timezone) <= 64),
  ADD CONSTRAINT appointments_source_length CHECK (length(source) <= 120);
ALTER TABLE pipeline_stages ADD CONSTRAINT pipeline_stages_name_length CHECK (length(name) <= 100),
  ADD CONSTRAINT pipeline_stages_position_range CHECK (position BETWEEN 1 AND 1000);
ALTER TABLE catalog_items
  ADD CONSTRAINT catalog_items_name_length CHECK (length(name) <= 200),
  ADD CONSTRAINT catalog_items_description_length CHECK (length(description) <= 2000),
  ADD CONSTRAINT catalog_items_duration_range CHECK (duration_minutes <= 100000),
  ADD CONSTRAINT catalog_items_price_range CHECK (price_amount <= 9007199254740991);
ALTER TABLE messages ADD CONSTRAINT messages_text_length CHECK (length(text) <= 4096);
ALTER TABLE automations ADD CONSTRAINT automations_name_length CHECK (length(name) <= 200);
