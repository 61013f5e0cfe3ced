-- One quota per key lineage: a rotated key and its successor (and theirs) share one rate-limit
-- count during the grace period, so rotating a key never doubles what it may send.
ALTER TABLE api_keys ADD COLUMN lineage_id text;

-- Existing chains: every key takes the id of the first key of its chain of rotations.
WITH RECURSIVE chain (id, lineage_id) AS (
  SELECT k.id, k.id FROM api_keys k
   WHERE NOT EXISTS (SELECT 1 FROM api_keys p WHERE p.rotated_to = k.id)
  UNION ALL
  SELECT k.id, c.lineage_id FROM api_keys k JOIN api_keys p ON p.rotated_to = k.id JOIN chain c ON c.id = p.id
)
UPDATE api_keys k SET lineage_id = c.lineage_id FROM chain c WHERE c.id = k.id;
UPDATE api_keys SET lineage_id = id WHERE lineage_id IS NULL;

ALTER TABLE api_keys ALTER COLUMN lineage_id SET NOT NULL;
