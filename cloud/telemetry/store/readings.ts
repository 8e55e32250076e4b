/**
 * PostgreSQL adapter for ingest: day partitions on demand, then one transaction per batch in three
 * round trips:
 * 1. BEGIN, the shared rollup lock, and the thresholds of the batch's buildings;
 * 2. one statement that claims the batch id, inserts every reading (one jsonb array parameter expanded
 *    by jsonb_array_elements; a plain INSERT, and the batch again with ON CONFLICT DO NOTHING if some
 *    reading was stored before),
 *    writes the batch's alerts to the outbox and marks late hours for a new rollup, each only if the
 *    batch id was new and no reading is older than the raw data still kept;
 * 3. COMMIT.
 */
import type { Pool, PoolClient } from 'pg';
import pg from 'pg';
import type { AlertEvent, ThresholdRow } from '../domain/alerts.js';
import { alertKeyOf } from '../domain/alerts.js';
import type { ReadingRow } from '../domain/batch.js';
import { DAY_MS, HOUR_MS, isoUtc, partitionNameOf } from '../domain/utc.js';
import { PARTITION_LOCK, ROLLUP_LOCK } from './locks.js';

/** What a batch becomes in storage. */
export interface StoredBatch {
  /** The signing key's id, '' for the shared key: batch ids are unique per key. */
  keyId: string;
  batchId: string | undefined;
  rows: readonly ReadingRow[];
  /** Metrics of the batch that declare bounds (their thresholds are read). */
  boundedMetrics: readonly string[];
  /** The alerts of the batch, given the thresholds in force (read in the same transaction). */
  alertsFor(thresholds: ThresholdRow[]): AlertEvent[];
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
  store(batch: StoredBatch): Promise<StoreOutcome>;
}

/**
 * The batch statement. Readings go in with a plain INSERT first: ON CONFLICT's speculative insertion
 * costs PostgreSQL about as much again per row as the insert itself, and a batch rarely repeats a
 * stored reading. A batch that does (a re-sent reading under a new batch id, or the same reading twice)
 * fails on the key with 23505, nothing of it stays, and it is written again whole with
 * ON CONFLICT DO NOTHING, which keeps the first copy of each reading.
 */
function ingestSql(readingConflicts: '' | 'ON CONFLICT DO NOTHING'): string {
  return `
WITH state AS (
  SELECT watermark, retained_from FROM rollup_state
), fresh AS (
  SELECT NOT EXISTS (SELECT 1 FROM state WHERE retained_from > to_timestamp($5 / 1000.0)) AS ok
), claim AS (
  INSERT INTO ingest_batches (key_id, batch_id, accepted)
  SELECT $1, $2, $3 FROM fresh WHERE fresh.ok AND $2::text IS NOT NULL
  ON CONFLICT DO NOTHING RETURNING 1
), go AS (
  SELECT 1 FROM fresh WHERE fresh.ok AND ($2::text IS NULL OR EXISTS (SELECT 1 FROM claim))
), ins AS (
  INSERT INTO readings (building_id, room_id, metric, ts, value, payload)
  SELECT e->>0, e->>1, e->>2, to_timestamp((e->>3)::float8 / 1000.0), (e->>4)::float8, e->5
  FROM jsonb_array_elements($4::jsonb) AS e
  WHERE EXISTS (SELECT 1 FROM go)
  ${readingConflicts} RETURNING 1
), alerts AS (
  INSERT INTO alert_outbox (alert_id, message_key, payload)
  SELECT a, k, p FROM unnest($7::text[], $8::text[], $9::jsonb[]) AS u(a, k, p)
  WHERE EXISTS (SELECT 1 FROM go)
  ON CONFLICT (alert_id) DO NOTHING RETURNING 1
), late AS (
  INSERT INTO rollup_pending (hour)
  SELECT DISTINCT date_trunc('hour', to_timestamp(t / 1000.0), 'UTC')
  FROM unnest($6::float8[]) AS u(t), state
  WHERE EXISTS (SELECT 1 FROM go) AND state.watermark > to_timestamp($5 / 1000.0) AND to_timestamp(t / 1000.0) < state.watermark
  ON CONFLICT DO NOTHING RETURNING 1
)
SELECT (SELECT ok FROM fresh) AS fresh,
       EXISTS (SELECT 1 FROM go) AS stored,
       (SELECT count(*) FROM ins)::int AS inserted,
       (SELECT count(*) FROM alerts)::int AS alerts`;
}

const INGEST = ingestSql('');
const INGEST_KEEPING_FIRST = ingestSql('ON CONFLICT DO NOTHING');

function byKey(a: ReadingRow, b: ReadingRow): number {
  // One order for every transaction, so two batches sharing readings never deadlock on each other.
  return a.buildingId < b.buildingId ? -1 : a.buildingId > b.buildingId ? 1 : a.roomId < b.roomId ? -1 : a.roomId > b.roomId ? 1 : a.metric < b.metric ? -1 : a.metric > b.metric ? 1 : a.ts - b.ts;
}

/** A lone UTF-16 surrogate: JSON escapes it as \\udXXX, which PostgreSQL's JSON parser refuses. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
const ESCAPED_SURROGATE = /\\ud[89a-f]/i;

/**
 * Every row, payload included, serialised in one go as one JSON array of
 * `[buildingId, roomId, metric, ts, value, payload]`: PostgreSQL parses it once as jsonb and reads the
 * elements by position, which costs it about what COPY's text parsing does (json_to_recordset and
 * text arrays cost it more, and their encoding costs the service more). JSON numbers carry doubles
 * exactly (shortest round-trip digits). A lone surrogate, which a text parameter would have sent as
 * U+FFFD, is sent as U+FFFD here too.
 */
function rowsJson(rows: readonly ReadingRow[]): string {
  const tuples = rows.map((r) => [r.buildingId, r.roomId, r.metric, r.ts, r.value, r.payload]);
  const json = JSON.stringify(tuples);
  if (!ESCAPED_SURROGATE.test(json)) return json;
  return JSON.stringify(tuples, (_key, value: unknown) => (typeof value === 'string' ? value.replace(LONE_SURROGATE, '\ufffd') : value));
}

const RETRYABLE = new Set(['40P01', '40001']);
const NO_PARTITION = '23514';
const DUPLICATE_KEY = '23505';

/**
 * BEGIN, the lock and the thresholds go in one simple-protocol round trip, which takes no parameters:
 * the ids are quoted with pg's escapeLiteral (standard_conforming_strings aware).
 */
function openingSql(buildingIds: readonly string[], metrics: readonly string[]): string {
  const head = `BEGIN; SELECT pg_advisory_xact_lock_shared(${ROLLUP_LOCK});`;
  if (buildingIds.length === 0 || metrics.length === 0) return head;
  const list = (values: readonly string[]) => values.map((v) => pg.escapeLiteral(v)).join(', ');
  return `${head} SELECT building_id, room_id, metric, bounds FROM thresholds WHERE building_id IN (${list(buildingIds)}) AND metric IN (${list(metrics)});`;
}

export class PgReadingsStore implements ReadingsStore {
  /** Day partitions this instance has created or seen, so the common batch creates none. */
  private readonly knownDays = new Set<number>();

  constructor(private readonly pool: Pool) {}

  async batchResult(keyId: string, batchId: string): Promise<number | undefined> {
    const { rows } = await this.pool.query<{ accepted: number }>('SELECT accepted FROM ingest_batches WHERE key_id = $1 AND batch_id = $2', [keyId, batchId]);
    return rows[0]?.accepted;
  }

  /** Creates the UTC day partitions these instants fall in, if missing. */
  async ensurePartitions(instants: Iterable<number>): Promise<void> {
    const days = new Set<number>();
    for (const ms of instants) {
      const day = Math.floor(ms / DAY_MS);
      if (!this.knownDays.has(day)) days.add(day);
    }
    for (const day of days) {
      const start = day * DAY_MS;
      const client = await this.pool.connect();
      try {
        await client.query('BEGIN');
        // CREATE … IF NOT EXISTS still races on the catalog; one creator at a time.
        await client.query('SELECT pg_advisory_xact_lock($1)', [PARTITION_LOCK]);
        await client.query(`CREATE TABLE IF NOT EXISTS ${partitionNameOf(start)} PARTITION OF readings FOR VALUES FROM ('${isoUtc(start)}') TO ('${isoUtc(start + DAY_MS)}')`);
        await client.query('COMMIT');
        this.knownDays.add(day);
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
    for (const day of this.knownDays) if (partitionNameOf(day * DAY_MS) === name) this.knownDays.delete(day);
  }

  async store(batch: StoredBatch): Promise<StoreOutcome> {
    let keepFirst = false;
    for (let attempt = 1; ; attempt++) {
      await this.ensurePartitions(batch.rows.map((r) => r.ts));
      try {
        return await this.storeOnce(batch, keepFirst);
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (code === DUPLICATE_KEY && !keepFirst) {
          // Some reading is stored already: the whole batch again, keeping the stored copies.
          keepFirst = true;
          attempt -= 1;
          continue;
        }
        if (attempt >= 3 || !(code && (RETRYABLE.has(code) || code === NO_PARTITION))) throw err;
        if (code === NO_PARTITION) this.knownDays.clear();
      }
    }
  }

  private async storeOnce(batch: StoredBatch, keepFirst: boolean): Promise<StoreOutcome> {
    const client = await this.pool.connect();
    try {
      const outcome = await this.write(client, batch, keepFirst);
      await client.query(outcome.kind === 'stored' ? 'COMMIT' : 'ROLLBACK');
      return outcome;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  private async write(client: PoolClient, batch: StoredBatch, keepFirst: boolean): Promise<StoreOutcome> {
    const buildings = [...new Set(batch.rows.map((r) => r.buildingId))];
    // Shared with every other ingest, exclusive for the rollup: a rollup never misses a committed
    // reading of an hour it closes, and never races a batch into a day it drops.
    const opening = (await client.query(openingSql(buildings, batch.boundedMetrics))) as unknown as Array<{ rows: unknown[] }>;
    const thresholdRows = (opening[2]?.rows ?? []) as Array<{ building_id: string; room_id: string | null; metric: string; bounds: Record<string, number> }>;
    const alerts = [...batch.alertsFor(thresholdRows.map((r) => ({ buildingId: r.building_id, roomId: r.room_id, metric: r.metric, bounds: r.bounds })))].sort((a, b) =>
      a.alertId < b.alertId ? -1 : a.alertId > b.alertId ? 1 : 0,
    );
    const rows = [...batch.rows].sort(byKey);
    let oldest = Infinity;
    // The earliest instant of each UTC hour the batch touches: enough to find the late hours.
    const earliestOfHour = new Map<number, number>();
    for (const r of rows) {
      if (r.ts < oldest) oldest = r.ts;
      const hour = Math.floor(r.ts / HOUR_MS);
      const earliest = earliestOfHour.get(hour);
      if (earliest === undefined || r.ts < earliest) earliestOfHour.set(hour, r.ts);
    }
    const result = await client.query<{ fresh: boolean; stored: boolean; inserted: number; alerts: number }>({
      name: keepFirst ? 'telemetry-ingest-batch-keep-first' : 'telemetry-ingest-batch',
      text: keepFirst ? INGEST_KEEPING_FIRST : INGEST,
      values: [
        batch.keyId,
        batch.batchId ?? null,
        batch.rows.length,
        rowsJson(rows),
        oldest,
        [...earliestOfHour.values()],
        alerts.map((a) => a.alertId),
        alerts.map(alertKeyOf),
        alerts.map((a) => JSON.stringify(a)),
      ],
    });
    const outcome = result.rows[0];
    if (!outcome?.fresh) {
      const state = await client.query<{ retained_from: Date | null }>('SELECT retained_from FROM rollup_state');
      const horizon = state.rows[0]?.retained_from?.getTime() ?? -Infinity;
      return { kind: 'too_old', indexes: batch.rows.flatMap((row, i) => (row.ts < horizon ? [i] : [])) };
    }
    if (!outcome.stored) {
      const first = await client.query<{ accepted: number }>('SELECT accepted FROM ingest_batches WHERE key_id = $1 AND batch_id = $2', [batch.keyId, batch.batchId]);
      return { kind: 'duplicate', accepted: first.rows[0]?.accepted ?? batch.rows.length };
    }
    return { kind: 'stored', accepted: batch.rows.length, inserted: outcome.inserted, alerts: outcome.alerts };
  }
}
