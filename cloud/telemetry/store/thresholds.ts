/**
 * PostgreSQL adapter for thresholds. Each edit is one transaction; each row (a room, or the building
 * for one metric) is one upsert that merges the bounds set and removes the bounds cleared.
 *
 * A room-level row wins over the building's in resolution, whatever it holds. So a room row is born
 * with the building's bounds of that moment, and the patch applies over them: setting one bound for a
 * room keeps the others it had from the building, and clearing one leaves the room without it even
 * where the building sets it. Later building edits no longer reach a room with a row of its own.
 *
 * An edit first takes the building's threshold lock (store/locks.ts), which a registration takes too,
 * so the two never hold rows the other waits for.
 */
import type { Pool } from 'pg';
import type { BoundsPatch } from '../domain/thresholds.js';
import { inLockOrder, lockBuildingThresholds } from './locks.js';
import { inTransaction } from './tx.js';

export interface ThresholdStore {
  /** Applies room-level patches for one metric; returns each room's bounds after the edit. */
  patchRooms(buildingId: string, metric: string, rooms: ReadonlyArray<{ roomId: string; patch: BoundsPatch }>): Promise<Record<string, Record<string, number>>>;
  /** Applies building-level patches; returns each metric's building bounds after the edit. */
  patchBuilding(buildingId: string, metrics: ReadonlyArray<{ metric: string; patch: BoundsPatch }>): Promise<Record<string, Record<string, number>>>;
}

const UPSERT_BUILDING = `
INSERT INTO thresholds AS t (building_id, room_id, metric, bounds, updated_at)
VALUES ($1, NULL, $2, $3::jsonb, now())
ON CONFLICT (building_id, room_id, metric) DO UPDATE
SET bounds = (t.bounds || $3::jsonb) - $4::text[], updated_at = now()
RETURNING bounds`;

/** A new room row starts from the building's row for the metric (none: empty), then takes the patch. */
const UPSERT_ROOM = `
INSERT INTO thresholds AS t (building_id, room_id, metric, bounds, updated_at)
VALUES ($1, $2, $3, (COALESCE(
  (SELECT b.bounds FROM thresholds b WHERE b.building_id = $1 AND b.room_id IS NULL AND b.metric = $3), '{}'::jsonb
) || $4::jsonb) - $5::text[], now())
ON CONFLICT (building_id, room_id, metric) DO UPDATE
SET bounds = (t.bounds || $4::jsonb) - $5::text[], updated_at = now()
RETURNING bounds`;

export class PgThresholdStore implements ThresholdStore {
  constructor(private readonly pool: Pool) {}

  patchRooms(buildingId: string, metric: string, rooms: ReadonlyArray<{ roomId: string; patch: BoundsPatch }>) {
    return inTransaction(this.pool, async (client) => {
      await lockBuildingThresholds(client, buildingId);
      const after = new Map<string, Record<string, number>>();
      for (const { roomId, patch } of inLockOrder(rooms, (r) => r.roomId)) {
        const { rows } = await client.query<{ bounds: Record<string, number> }>(UPSERT_ROOM, [buildingId, roomId, metric, JSON.stringify(patch.set), patch.clear]);
        after.set(roomId, rows[0]?.bounds ?? {});
      }
      // In the body's order. fromEntries makes every room an own key, "__proto__" too (an assignment
      // would set the prototype).
      return Object.fromEntries(rooms.map(({ roomId }): [string, Record<string, number>] => [roomId, after.get(roomId) ?? {}]));
    });
  }

  patchBuilding(buildingId: string, metrics: ReadonlyArray<{ metric: string; patch: BoundsPatch }>) {
    return inTransaction(this.pool, async (client) => {
      await lockBuildingThresholds(client, buildingId);
      const after = new Map<string, Record<string, number>>();
      for (const { metric, patch } of inLockOrder(metrics, (m) => m.metric)) {
        const { rows } = await client.query<{ bounds: Record<string, number> }>(UPSERT_BUILDING, [buildingId, metric, JSON.stringify(patch.set), patch.clear]);
        after.set(metric, rows[0]?.bounds ?? {});
      }
      return Object.fromEntries(metrics.map(({ metric }): [string, Record<string, number>] => [metric, after.get(metric) ?? {}]));
    });
  }
}
