/**
 * PostgreSQL adapter for registered buildings, rooms and sensors. Sensors are the only source of
 * device endpoints: the device adapter reads them here, never from a request.
 */
import type { Pool } from 'pg';
import type { RegisteredSensor, SensorLookup } from '../../../shared/devices/adapter.js';
import type { Registration } from '../domain/registration.js';
import { inLockOrder, lockBuildingThresholds } from './locks.js';
import { inTransaction } from './tx.js';

export interface BuildingStore extends SensorLookup {
  /** Registers a building, its rooms and sensors, and its thresholds, in one transaction. */
  applyRegistration(registration: Registration): Promise<void>;
  /** The sensors of one room, ordered by sensor id. */
  sensorsIn(buildingId: string, roomId: string): Promise<RegisteredSensor[]>;
}

interface SensorRow {
  building_id: string;
  sensor_id: string;
  room_id: string;
  metric: string;
  driver: string;
  endpoint: string;
}

const sensorOfRow = (r: SensorRow): RegisteredSensor => ({
  buildingId: r.building_id,
  sensorId: r.sensor_id,
  roomId: r.room_id,
  metric: r.metric,
  driver: r.driver,
  endpoint: r.endpoint,
});

export class PgBuildingStore implements BuildingStore {
  constructor(private readonly pool: Pool) {}

  applyRegistration(registration: Registration): Promise<void> {
    const { buildingId, rooms, sensors, thresholds } = registration;
    return inTransaction(this.pool, async (client) => {
      // First of its locks, as threshold edits take it first (store/locks.ts): its threshold rows are
      // written in two statements, which a PATCH between them could otherwise deadlock with.
      if (thresholds.length > 0) await lockBuildingThresholds(client, buildingId);
      await client.query(
        'INSERT INTO buildings (building_id) VALUES ($1) ON CONFLICT (building_id) DO UPDATE SET updated_at = now()',
        [buildingId],
      );
      if (rooms.length > 0) {
        await client.query('INSERT INTO rooms (building_id, room_id) SELECT $1, r FROM unnest($2::text[]) AS u(r) ON CONFLICT DO NOTHING', [buildingId, rooms]);
      }
      if (sensors.length > 0) {
        await client.query(
          `INSERT INTO sensors (building_id, sensor_id, room_id, metric, driver, endpoint)
           SELECT $1, s, r, m, d, e FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) AS u(s, r, m, d, e)
           ON CONFLICT (building_id, sensor_id) DO UPDATE
           SET room_id = EXCLUDED.room_id, metric = EXCLUDED.metric, driver = EXCLUDED.driver, endpoint = EXCLUDED.endpoint, registered_at = now()`,
          [buildingId, sensors.map((s) => s.sensorId), sensors.map((s) => s.roomId), sensors.map((s) => s.metric), sensors.map((s) => s.driver), sensors.map((s) => s.endpoint)],
        );
      }
      if (thresholds.length > 0) {
        // Every room at once (the building itself when no room is named): one statement for all of them.
        // Rows in lock order (store/locks.ts), rooms then metrics, as threshold edits take theirs.
        const sortedRooms = inLockOrder(rooms, (r) => r);
        const sortedThresholds = inLockOrder(thresholds, (t) => t.metric);
        const scopes: Array<string | null> = sortedRooms.length > 0 ? sortedRooms : [null];
        const metrics = sortedThresholds.map((t) => t.metric);
        if (rooms.length > 0) {
          // A room row the registration creates starts from the building's row, as a patched one does
          // (store/thresholds.ts); the registration's bounds then merge into every room's row.
          await client.query(
            `INSERT INTO thresholds (building_id, room_id, metric, bounds, updated_at)
             SELECT $1, r, bl.metric, bl.bounds, now()
             FROM unnest($2::text[]) AS rooms(r)
             JOIN thresholds bl ON bl.building_id = $1 AND bl.room_id IS NULL AND bl.metric = ANY($3::text[])
             ON CONFLICT (building_id, room_id, metric) DO NOTHING`,
            [buildingId, sortedRooms, metrics],
          );
        }
        await client.query(
          `INSERT INTO thresholds AS t (building_id, room_id, metric, bounds, updated_at)
           SELECT $1, r, m, b, now()
           FROM unnest($2::text[]) WITH ORDINALITY AS rooms(r, ri) CROSS JOIN unnest($3::text[], $4::jsonb[]) WITH ORDINALITY AS ms(m, b, mi)
           ORDER BY ri, mi
           ON CONFLICT (building_id, room_id, metric) DO UPDATE SET bounds = t.bounds || EXCLUDED.bounds, updated_at = now()`,
          [buildingId, scopes, metrics, sortedThresholds.map((t) => JSON.stringify(t.bounds))],
        );
      }
    });
  }

  async sensorOf(buildingId: string, roomId: string, sensorId: string): Promise<RegisteredSensor | undefined> {
    const { rows } = await this.pool.query<SensorRow>(
      'SELECT building_id, sensor_id, room_id, metric, driver, endpoint FROM sensors WHERE building_id = $1 AND room_id = $2 AND sensor_id = $3',
      [buildingId, roomId, sensorId],
    );
    return rows[0] ? sensorOfRow(rows[0]) : undefined;
  }

  async sensorsIn(buildingId: string, roomId: string): Promise<RegisteredSensor[]> {
    const { rows } = await this.pool.query<SensorRow>(
      'SELECT building_id, sensor_id, room_id, metric, driver, endpoint FROM sensors WHERE building_id = $1 AND room_id = $2 ORDER BY sensor_id',
      [buildingId, roomId],
    );
    return rows.map(sensorOfRow);
  }

  /** Those of `buildingIds` no registration has named yet, in the order given. */
  async unregistered(buildingIds: readonly string[]): Promise<string[]> {
    const { rows } = await this.pool.query<{ building_id: string }>('SELECT building_id FROM buildings WHERE building_id = ANY($1::text[])', [buildingIds]);
    const registered = new Set(rows.map((r) => r.building_id));
    return buildingIds.filter((id) => !registered.has(id));
  }
}
