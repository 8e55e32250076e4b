/**
 * PostgreSQL adapter for ingest: day partitions on demand, then one transaction per batch that claims
 * the batch id, inserts every reading with one UNNEST statement, writes the batch's alerts to the
 * outbox, and marks late hours for a new rollup.
 */
import type { Pool, PoolClient } from 'pg';
import type { AlertEvent, ThresholdRow } from '../domain/alerts.js';
import { alertKeyOf } from '../domain/alerts.js';
import type { ReadingRow } from '../domain/batch.js';
import { DAY_MS, floorDay, floorHour, isoUtc, partitionNameOf } from '../domain/utc.js';
import { PARTITION_LOCK, ROLLUP_LOCK } from './locks.js';

/** What a batch becomes in storage. */
export interface StoredBatch {
  /** The signing key's id, '' for the shared key: batch ids are unique per key. */
  keyId: string;
  batchId: string | undefined;
  rows: readonly ReadingRow[];
  alerts: readonly AlertEvent[];
}

export type StoreOutcome =
  | { kind: 'stored'; accepted: number; inserted: number; alerts: number }
  | { kind: 'duplicate'; accepted: number }
  /** Some rows are older than the raw data still kept (their day was already dropped). */
  | { kind: 'too_old'; indexes: number[] };

/** The port the ingest service uses. */
export interface ReadingsStore {
  /** The result stored for a batch id, if that batch was accepted before. */
  batchResult(keyId: string, batchId: string): Promise<number | undefined>;
  /** Building- and room-level thresholds of these buildings for these metrics. */
  thresholdsOf(buildingIds: readonly string[], metrics: readonly string[]): Promise<ThresholdRow[]>;
  store(batch: StoredBatch): Promise<StoreOutcome>;
}

const INSERT_READINGS = `
INSERT INTO readings (building_id, room_id, metric, ts, value, payload)
SELECT b, r, m, to_timestamp(t / 1000.0), v, p
FROM unnest($1::text[], $2::text[], $3::text[], $4::float8[], $5::float8[], $6::jsonb[]) AS u(b, r, m, t, v, p)
ON CONFLICT DO NOTHING`;

const INSERT_ALERTS = `
INSERT INTO alert_outbox (alert_id, message_key, payload)
SELECT a, k, p FROM unnest($1::text[], $2::text[], $3::jsonb[]) AS u(a, k, p)
ON CONFLICT (alert_id) DO NOTHING`;

function byKey(a: ReadingRow, b: ReadingRow): number {
  // One order for every transaction, so two batches sharing readings never deadlock on each other.
  return a.buildingId < b.buildingId ? -1 : a.buildingId > b.buildingId ? 1 : a.roomId < b.roomId ? -1 : a.roomId > b.roomId ? 1 : a.metric < b.metric ? -1 : a.metric > b.metric ? 1 : a.ts - b.ts;
}

const RETRYABLE = new Set(['40P01', '40001']);
const NO_PARTITION = '23514';

export class PgReadingsStore implements ReadingsStore {
  /** Day partitions this instance has created or seen, so the common batch creates none. */
  private readonly knownDays = new Set<string>();

  constructor(private readonly pool: Pool) {}

  async batchResult(keyId: string, batchId: string): Promise<number | undefined> {
    const { rows } = await this.pool.query<{ accepted: number }>('SELECT accepted FROM ingest_batches WHERE key_id = $1 AND batch_id = $2', [keyId, batchId]);
    return rows[0]?.accepted;
  }

  async thresholdsOf(buildingIds: readonly string[], metrics: readonly string[]): Promise<ThresholdRow[]> {
    if (buildingIds.length === 0 || metrics.length === 0) return [];
    const { rows } = await this.pool.query<{ building_id: string; room_id: string | null; metric: string; bounds: Record<string, number> }>(
      'SELECT building_id, room_id, metric, bounds FROM thresholds WHERE building_id = ANY($1::text[]) AND metric = ANY($2::text[])',
      [buildingIds, metrics],
    );
    return rows.map((r) => ({ buildingId: r.building_id, roomId: r.room_id, metric: r.metric, bounds: r.bounds }));
  }

  /** Creates the UTC day partitions these instants fall in, if missing. */
  async ensurePartitions(instants: Iterable<number>): Promise<void> {
    const days = new Set<number>();
    for (const ms of instants) if (!this.knownDays.has(partitionNameOf(ms))) days.add(floorDay(ms));
    for (const day of days) {
      const name = partitionNameOf(day);
      const client = await this.pool.connect();
      try {
        await client.query('BEGIN');
        // CREATE … IF NOT EXISTS still races on the catalog; one creator at a time.
        await client.query('SELECT pg_advisory_xact_lock($1)', [PARTITION_LOCK]);
        await client.query(`CREATE TABLE IF NOT EXISTS ${name} PARTITION OF readings FOR VALUES FROM ('${isoUtc(day)}') TO ('${isoUtc(day + DAY_MS)}')`);
        await client.query('COMMIT');
        this.knownDays.add(name);
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      } finally {
        client.release();
      }
    }
  }

  /** Forgets a partition (the retention job dropped it). */
  forgetPartition(name: string): void {
    this.knownDays.delete(name);
  }

  async store(batch: StoredBatch): Promise<StoreOutcome> {
    for (let attempt = 1; ; attempt++) {
      await this.ensurePartitions(batch.rows.map((r) => r.ts));
      try {
        return await this.storeOnce(batch);
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (attempt >= 3 || !(code && (RETRYABLE.has(code) || code === NO_PARTITION))) throw err;
        if (code === NO_PARTITION) this.knownDays.clear();
      }
    }
  }

  private async storeOnce(batch: StoredBatch): Promise<StoreOutcome> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const outcome = await this.write(client, batch);
      await client.query(outcome.kind === 'stored' ? 'COMMIT' : 'ROLLBACK');
      return outcome;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  private async write(client: PoolClient, batch: StoredBatch): Promise<StoreOutcome> {
    // Shared with every other ingest, exclusive for the rollup: a rollup never misses a committed
    // reading of an hour it closes, and never races a batch into a day it drops.
    const state = await client.query<{ watermark: Date | null; retained_from: Date | null }>(
      'SELECT s.watermark, s.retained_from FROM pg_advisory_xact_lock_shared($1) AS l, rollup_state AS s',
      [ROLLUP_LOCK],
    );
    const watermark = state.rows[0]?.watermark?.getTime() ?? null;
    const retainedFrom = state.rows[0]?.retained_from?.getTime() ?? null;
    if (retainedFrom !== null) {
      const indexes = batch.rows.flatMap((row, i) => (row.ts < retainedFrom ? [i] : []));
      if (indexes.length > 0) return { kind: 'too_old', indexes };
    }
    if (batch.batchId !== undefined) {
      const claimed = await client.query<{ accepted: number }>(
        'INSERT INTO ingest_batches (key_id, batch_id, accepted) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING accepted',
        [batch.keyId, batch.batchId, batch.rows.length],
      );
      if (claimed.rowCount === 0) {
        const first = await client.query<{ accepted: number }>('SELECT accepted FROM ingest_batches WHERE key_id = $1 AND batch_id = $2', [batch.keyId, batch.batchId]);
        return { kind: 'duplicate', accepted: first.rows[0]?.accepted ?? batch.rows.length };
      }
    }
    const rows = [...batch.rows].sort(byKey);
    const inserted = await client.query(INSERT_READINGS, [
      rows.map((r) => r.buildingId),
      rows.map((r) => r.roomId),
      rows.map((r) => r.metric),
      rows.map((r) => r.ts),
      rows.map((r) => r.value),
      rows.map((r) => JSON.stringify(r.payload)),
    ]);
    if (batch.alerts.length > 0) {
      const alerts = [...batch.alerts].sort((a, b) => (a.alertId < b.alertId ? -1 : a.alertId > b.alertId ? 1 : 0));
      await client.query(INSERT_ALERTS, [alerts.map((a) => a.alertId), alerts.map(alertKeyOf), alerts.map((a) => JSON.stringify(a))]);
    }
    if (watermark !== null) {
      const late = [...new Set(rows.filter((r) => r.ts < watermark).map((r) => floorHour(r.ts)))];
      if (late.length > 0) {
        await client.query('INSERT INTO rollup_pending (hour) SELECT to_timestamp(h / 1000.0) FROM unnest($1::float8[]) AS u(h) ON CONFLICT DO NOTHING', [late]);
      }
    }
    return { kind: 'stored', accepted: batch.rows.length, inserted: inserted.rowCount ?? 0, alerts: batch.alerts.length };
  }
}
