-- The zone tracker's state. Devices are keyed by the HMAC of their MAC under the gateway's device key;
-- no raw MAC is ever stored.
CREATE TABLE tracked_devices (
  device_id         TEXT PRIMARY KEY,
  zone              TEXT NOT NULL,
  ap                TEXT NOT NULL,
  rssi_dbm          REAL NOT NULL,
  challenger_zone   TEXT,
  challenger_polls  INTEGER NOT NULL DEFAULT 0,
  frozen_polls      INTEGER NOT NULL DEFAULT 0,
  absent_polls      INTEGER NOT NULL DEFAULT 0,
  last_heard_poll   INTEGER NOT NULL
) WITHOUT ROWID;

-- Moves per zone pair per poll, kept for the transition window.
CREATE TABLE zone_transitions (
  poll       INTEGER NOT NULL,
  from_zone  TEXT NOT NULL,
  to_zone    TEXT NOT NULL,
  count      INTEGER NOT NULL CHECK (count >= 0),
  PRIMARY KEY (poll, from_zone, to_zone)
) WITHOUT ROWID;

CREATE TABLE tracker_meta (
  key    TEXT PRIMARY KEY,
  value  TEXT NOT NULL
) WITHOUT ROWID;
