-- The lookups of GET /v2/contacts?email=…&phone=… (external_id= has the unique index already):
-- a sync finds a contact by e-mail (in any case) or phone before creating it, at the same cost
-- whatever the size of the workspace.
CREATE INDEX contacts_by_email ON contacts (workspace_id, lower(email));
CREATE INDEX contacts_by_phone ON contacts (workspace_id, phone);
