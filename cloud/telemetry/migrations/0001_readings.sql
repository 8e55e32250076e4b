-- Raw readings: one row per (building, room, metric, instant), kept 14 days in UTC day partitions that
-- the service creates on demand (readings_pYYYYMMDD) and the retention job drops once rolled up.
CREATE TABLE IF NOT EXISTS readings (
  building_id text NOT NULL,
  room_id     text NOT NULL,
  metric      text NOT NULL,
  ts          timestamptz NOT NULL,
  value       double precision NOT NULL,
  -- declared fields beyond the columns (humidity, sensorId, fromRoomId, ...)
  payload     jsonb NOT NULL DEFAULT '{}'::jsonb,
  PRIMARY KEY (building_id, room_id, metric, ts)
) PARTITION BY RANGE (ts);

-- Hourly aggregate, kept forever. Hours are UTC. For count metrics, values strictly between 0 and the
-- privacy floor are stored as NULL with suppressed = true.
CREATE TABLE IF NOT EXISTS readings_hourly (
  building_id text NOT NULL,
  room_id     text NOT NULL,
  metric      text NOT NULL,
  hour        timestamptz NOT NULL,
  count       bigint NOT NULL,
  min         double precision,
  max         double precision,
  sum         double precision,
  avg         double precision,
  suppressed  boolean NOT NULL DEFAULT false,
  PRIMARY KEY (building_id, room_id, metric, hour)
);

-- Every hour before `watermark` has been rolled up; raw data before `retained_from` has been dropped.
CREATE TABLE IF NOT EXISTS rollup_state (
  singleton     boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  watermark     timestamptz,
  retained_from timestamptz
);
INSERT INTO rollup_state (singleton) VALUES (true) ON CONFLICT DO NOTHING;

-- Hours before the watermark that received late readings and must be rolled up again.
CREATE TABLE IF NOT EXISTS rollup_pending (
  hour timestamptz PRIMARY KEY
);

-- One row per accepted batch id, per signing key, so a repeated batch answers the first result.
CREATE TABLE IF NOT EXISTS ingest_batches (
  key_id      text NOT NULL,
  batch_id    text NOT NULL,
  accepted    integer NOT NULL,
  received_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (key_id, batch_id)
);
CREATE INDEX IF NOT EXISTS ingest_batches_received ON ingest_batches (received_at);
