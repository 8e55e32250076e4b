-- Buildings, rooms and sensors, written by the building-registrations consumer.
CREATE TABLE IF NOT EXISTS buildings (
  building_id   text PRIMARY KEY,
  registered_at timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS rooms (
  building_id text NOT NULL REFERENCES buildings (building_id) ON DELETE CASCADE,
  room_id     text NOT NULL,
  PRIMARY KEY (building_id, room_id)
);

CREATE TABLE IF NOT EXISTS sensors (
  building_id   text NOT NULL REFERENCES buildings (building_id) ON DELETE CASCADE,
  sensor_id     text NOT NULL,
  room_id       text NOT NULL,
  metric        text NOT NULL,
  -- the device family: firmware-bindings/devices/<driver>.json
  driver        text NOT NULL,
  -- where the unit is reachable; the only source of device addresses
  endpoint      text NOT NULL,
  registered_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (building_id, sensor_id)
);
CREATE INDEX IF NOT EXISTS sensors_by_room ON sensors (building_id, room_id);

-- Thresholds per building (room_id NULL) and per room; a room's bound wins over the building's.
CREATE TABLE IF NOT EXISTS thresholds (
  building_id text NOT NULL,
  room_id     text,
  metric      text NOT NULL,
  bounds      jsonb NOT NULL DEFAULT '{}'::jsonb,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT thresholds_scope UNIQUE NULLS NOT DISTINCT (building_id, room_id, metric)
);
