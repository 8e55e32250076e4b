-- A zoneTransition reading counts the people who moved from one zone (fromRoomId, in the payload) into
-- its room. Two of them into the same room at the same instant, from different zones, are different
-- readings, but the key (building_id, room_id, metric, ts) made them one: the second was taken for a
-- re-sent copy of the first and silently not stored. The origin joins the key as a column generated from
-- the payload, '' for every other metric, so their key stays what it was. Rollups still aggregate per
-- (building, room, metric, hour): the hour's transitions into a room, whatever their origin.
ALTER TABLE readings ADD COLUMN IF NOT EXISTS from_room_id text NOT NULL
  GENERATED ALWAYS AS (coalesce(payload->>'fromRoomId', '')) STORED;

DO $$
BEGIN
  IF NOT EXISTS (
    SELECT 1 FROM pg_constraint c
    WHERE c.conrelid = 'readings'::regclass AND c.contype = 'p'
      AND c.conkey = (SELECT array_agg(a.attnum ORDER BY k.ord)
                      FROM unnest(ARRAY['building_id', 'room_id', 'metric', 'ts', 'from_room_id']) WITH ORDINALITY AS k(name, ord)
                      JOIN pg_attribute a ON a.attrelid = 'readings'::regclass AND a.attname = k.name)
  ) THEN
    ALTER TABLE readings DROP CONSTRAINT IF EXISTS readings_pkey;
    ALTER TABLE readings ADD CONSTRAINT readings_pkey PRIMARY KEY (building_id, room_id, metric, ts, from_room_id);
  END IF;
END $$;
