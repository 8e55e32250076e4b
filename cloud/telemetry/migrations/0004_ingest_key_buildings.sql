-- The buildings each per-gateway ingest key may write; a batch signed with the key that holds a reading
-- for any other building is refused whole (403). See cloud/telemetry/README.md, "Ingest keys".
--
-- Keys made before this migration get NULL: any building, as before, so no gateway stops at the
-- upgrade. The service's start and `keys-cli.ts list` warn about each of them until it is confined with
-- `keys-cli.ts bind <keyId> --building <id> …`. Keys made from now on name their buildings: keys-cli
-- requires them, and a row inserted by hand without building_ids gets the empty default, which may
-- write no building at all (fail closed, not open).
ALTER TABLE ingest_keys ADD COLUMN IF NOT EXISTS building_ids text[];
ALTER TABLE ingest_keys ALTER COLUMN building_ids SET DEFAULT '{}';
ALTER TABLE ingest_keys DROP CONSTRAINT IF EXISTS ingest_keys_building_ids_check;
ALTER TABLE ingest_keys ADD CONSTRAINT ingest_keys_building_ids_check
  CHECK (array_position(building_ids, NULL) IS NULL AND '' <> ALL (building_ids));
COMMENT ON COLUMN ingest_keys.building_ids IS
  'Buildings the key may write. NULL: any building (keys made before 0004 only); empty: none.';
