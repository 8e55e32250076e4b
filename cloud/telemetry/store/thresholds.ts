/**
 * PostgreSQL adapter for thresholds. Each edit is one transaction; each row (a room, or the building
 * for one metric) is one upsert that merges the bounds set and removes the bounds cleared.
 */
import type { Pool } from 'pg';
import type { BoundsPatch } from '../domain/thresholds.js';
import { inTransaction } from './tx.js';

export interface ThresholdStore {
  /** Applies room-level patches for one metric; returns each room's bounds after the edit. */
  patchRooms(buildingId: string, metric: string, rooms: ReadonlyArray<{ roomId: string; patch: BoundsPatch }>): Promise<Record<string, Record<string, number>>>;
  /** Applies building-level patches; returns each metric's building bounds after the edit. */
  patchBuilding(buildingId: string, metrics: ReadonlyArray<{ metric: string; patch: BoundsPatch }>): Promise<Record<string, Record<string, number>>>;
}

const UPSERT = `
INSERT INTO thresholds AS t (building_id, room_id, metric, bounds, updated_at)
VALUES ($1, $2, $3, $4::jsonb, now())
ON CONFLICT (building_id, room_id, metric) DO UPDATE
SET bounds = (t.bounds || EXCLUDED.bounds) - $5::text[], updated_at = now()
RETURNING bounds`;

export class PgThresholdStore implements ThresholdStore {
  constructor(private readonly pool: Pool) {}

  patchRooms(buildingId: string, metric: string, rooms: ReadonlyArray<{ roomId: string; patch: BoundsPatch }>) {
    return inTransaction(this.pool, async (client) => {
      const out: Record<string, Record<string, number>> = {};
      for (const { roomId, patch } of rooms) {
        const { rows } = await client.query<{ bounds: Record<string, number> }>(UPSERT, [buildingId, roomId, metric, JSON.stringify(patch.set), patch.clear]);
        out[roomId] = rows[0]?.bounds ?? {};
      }
      return out;
    });
  }

  patchBuilding(buildingId: string, metrics: ReadonlyArray<{ metric: string; patch: BoundsPatch }>) {
    return inTransaction(this.pool, async (client) => {
      const out: Record<string, Record<string, number>> = {};
      for (const { metric, patch } of metrics) {
        const { rows } = await client.query<{ bounds: Record<string, number> }>(UPSERT, [buildingId, null, metric, JSON.stringify(patch.set), patch.clear]);
        out[metric] = rows[0]?.bounds ?? {};
      }
      return out;
    });
  }
}
