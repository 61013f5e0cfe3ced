-- The first step of PUT /contacts/external/{external_id}: take the external id, then lock its
-- contact if there is one, in one round trip.
--
-- The id first, with the same transaction-scoped advisory lock a batch upsert takes for each of its
-- ids (seed 1): every writer that can create a contact of this external_id holds it until commit,
-- so upserts of one id run one after the other. Without it, an upsert that found no contact goes on
-- to INSERT, whose BEFORE trigger takes the workspace's sync clock (03_sync_clock.sql) before the
-- conflict check; if the contact committed meanwhile and a second upsert locked it, the first waits
-- for that row while holding the clock the second needs: a deadlock, broken by PostgreSQL aborting
-- one.
--
-- A function because of the order: one statement could scan the contact before taking the lock;
-- here the lock is granted first, and the SELECT … FOR UPDATE after it sees what committed before.
CREATE OR REPLACE FUNCTION contacts_lock_external(p_workspace_id uuid, p_external_id text) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended(p_workspace_id::text || ':' || p_external_id, 1));
  PERFORM 1 FROM contacts WHERE workspace_id = p_workspace_id AND external_id = p_external_id FOR UPDATE;
END
$$;

-- The check behind each run of creations of a batch upsert (BATCH_CREATE in
-- src/modules/contacts/contacts.repository.ts): the batch took its ids' locks and found no contact
-- for these, so its insert, which skips an external id that has a contact, should have created every
-- one. A writer that creates contacts without those locks (plain SQL, the product's own jobs) may
-- have created one since. Then the batch's answer would say created for a contact it did not
-- create, so the transaction fails as a serialization failure (40001), which the service retries
-- whole, and the retry finds the contact and updates it.
CREATE OR REPLACE FUNCTION contacts_batch_created(created bigint, planned int) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  IF created <> planned THEN
    RAISE EXCEPTION 'another writer created a contact of this batch''s external ids since the batch looked them up'
      USING ERRCODE = 'serialization_failure';
  END IF;
END
$$;
