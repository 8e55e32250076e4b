/**
 * PostgreSQL adapter for ingest: day partitions on demand, then one transaction per batch in two
 * round trips:
 * 1. BEGIN, the shared rollup lock, the rollup state, the thresholds of the batch's buildings, and the
 *    claim of the batch id (only if no reading is older than the raw data still kept);
 * 2. COPY of every reading (binary format, copy-binary.ts), late hours marked for a new rollup, the
 *    outbox lock and the batch's alerts into the outbox, and COMMIT, in one message.
 * A reading's key is (building, room, metric, instant, origin): the origin is a zoneTransition's
 * fromRoomId, generated from the payload, '' for every other metric. A batch holding a reading stored
 * before (a re-sent reading under a new batch id, or the same key twice) fails the COPY on the key; it
 * is then written again whole in one statement with ON CONFLICT DO NOTHING, which keeps the first copy
 * of each reading, and tells which of the batch's readings it stored (only those are published).
 *
 * Outbox rows are inserted under OUTBOX_LOCK, taken right before the insert and held to COMMIT, so they
 * commit in the order of their seq, which is the order the relay sends them in. Nothing but the insert
 * and COMMIT follows the lock, and the insert can wait only on the relay marking a row it repeats (no
 * other transaction writes the outbox without the lock), which never takes it: no deadlock.
 */
import type { Pool, PoolClient } from 'pg';
import pg from 'pg';
import type { AlertEvent } from '../../../shared/alert-event.js';
import type { RaisedAlert, ThresholdRow } from '../domain/alerts.js';
import { alertKeyOf } from '../domain/alerts.js';
import type { ReadingRow } from '../domain/batch.js';
import { DAY_MS, HOUR_MS, isoUtc, partitionNameOf } from '../domain/utc.js';
import { binaryCopyRows, postgresMicros, storedInstant } from './copy-binary.js';
import { copyIn } from './copy-in.js';
import { OUTBOX_LOCK, PARTITION_LOCK } from './locks.js';
import { open } from './opening.js';

/** What a batch becomes in storage. */
export interface StoredBatch {
  /** The signing key's id, '' for the shared key: batch ids are unique per key. */
  keyId: string;
  batchId: string | undefined;
  rows: readonly ReadingRow[];
  /** Metrics of the batch that declare bounds (their thresholds are read). */
  boundedMetrics: readonly string[];
  /**
   * The alerts of the batch, given the thresholds in force (read in the same transaction), each with
   * the index in `rows` of the reading that raised it. Only a reading the batch stores raises its
   * alerts: a repeat of a stored reading, whatever value it carries, raises none.
   */
  alertsFor(thresholds: ThresholdRow[]): RaisedAlert[];
}

export type StoreOutcome =
  | {
      kind: 'stored';
      accepted: number;
      inserted: number;
      alerts: number;
      /**
       * Indexes into the batch's rows of the readings this batch stored, ascending, when it repeated
       * readings stored before (only those are new to subscribers); absent when every row was stored.
       */
      storedIndexes?: number[];
    }
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
 * The instant `micros` microseconds after PostgreSQL's epoch, exactly: an interval of whole
 * microseconds (a bigint is a float8 exactly below 2^53) added to the epoch, whatever the session's
 * time zone. The keep-first insert must store, and look up, the very microsecond COPY stores
 * ({@link postgresMicros}); `to_timestamp(ms / 1000.0)` rounds some fractions to the next one.
 */
const instantOfMicros = (micros: string) => `(timestamptz '2000-01-01 00:00:00+00' + ${micros} * interval '1 microsecond')`;

/**
 * The batch as one statement, for a batch that repeats a stored reading: it claims the batch id,
 * inserts the readings with ON CONFLICT DO NOTHING (one jsonb array parameter expanded by
 * jsonb_array_elements), tells which elements it stored, and marks late hours, each only if the batch
 * id was new and no reading is older than the raw data still kept. The alerts of the stored readings
 * go to the outbox after it ({@link outboxSql}). The common batch goes by COPY instead: ON CONFLICT's
 * speculative insertion costs PostgreSQL about as much again per row as the insert itself.
 *
 * $5 is the batch's oldest instant as stored and $6 the hours it is stored in (ms, exact in float8).
 */
function ingestSql(readingConflicts: 'ON CONFLICT DO NOTHING'): string {
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
  SELECT e->>0, e->>1, e->>2, ${instantOfMicros('(e->>3)::bigint')}, (e->>4)::float8, e->5
  FROM jsonb_array_elements($4::jsonb) AS e
  WHERE EXISTS (SELECT 1 FROM go)
  ${readingConflicts} RETURNING building_id, room_id, metric, ts, from_room_id
), stored_elements AS (
  -- The element each stored row came from: the first of its key, as INSERT … SELECT inserts in
  -- order and keeps the first of a key repeated within the statement.
  SELECT min(e.i) AS i
  FROM ins JOIN jsonb_array_elements($4::jsonb) WITH ORDINALITY AS e(v, i)
    ON ins.building_id = e.v->>0 AND ins.room_id = e.v->>1 AND ins.metric = e.v->>2
   AND ins.ts = ${instantOfMicros('(e.v->>3)::bigint')} AND ins.from_room_id = coalesce(e.v->5->>'fromRoomId', '')
  GROUP BY ins.building_id, ins.room_id, ins.metric, ins.ts, ins.from_room_id
), late AS (
  INSERT INTO rollup_pending (hour)
  SELECT DISTINCT to_timestamp(h / 1000.0)
  FROM unnest($6::float8[]) AS u(h), state
  WHERE EXISTS (SELECT 1 FROM go) AND state.watermark > to_timestamp($5 / 1000.0) AND to_timestamp(h / 1000.0) < state.watermark
  ORDER BY 1
  ON CONFLICT DO NOTHING RETURNING 1
)
SELECT (SELECT ok FROM fresh) AS fresh,
       EXISTS (SELECT 1 FROM go) AS stored,
       (SELECT count(*) FROM ins)::int AS inserted,
       (SELECT coalesce(array_agg(i::int ORDER BY i), '{}') FROM stored_elements) AS stored_elements`;
}

const INGEST_KEEPING_FIRST = ingestSql('ON CONFLICT DO NOTHING');

function byKey(a: ReadingRow, b: ReadingRow): number {
  // One order for every transaction, the key's, so two batches sharing readings never deadlock on each other.
  if (a.buildingId !== b.buildingId) return a.buildingId < b.buildingId ? -1 : 1;
  if (a.roomId !== b.roomId) return a.roomId < b.roomId ? -1 : 1;
  if (a.metric !== b.metric) return a.metric < b.metric ? -1 : 1;
  if (a.ts !== b.ts) return a.ts - b.ts;
  return a.fromRoomId < b.fromRoomId ? -1 : a.fromRoomId > b.fromRoomId ? 1 : 0;
}

/**
 * Every row, payload included, serialised in one go as one JSON array of
 * `[buildingId, roomId, metric, micros, value, payload]`: PostgreSQL parses it once as jsonb and reads
 * the elements by position, which costs it about what COPY's text parsing does (json_to_recordset and
 * text arrays cost it more, and their encoding costs the service more). The instant is the integer
 * COPY stores ({@link postgresMicros}); JSON numbers carry the value's double exactly (shortest
 * round-trip digits). Validation leaves no lone surrogate in any string (ids refuse them), so no
 * escaped lone surrogate (`\\ud800`) reaches PostgreSQL's JSON parser, which refuses it.
 */
function rowsJson(rows: readonly ReadingRow[]): string {
  // The payload is JSON text already: each element is written around it.
  return `[${rows.map((r) => `${JSON.stringify([r.buildingId, r.roomId, r.metric, storedMicros(r), r.value]).slice(0, -1)},${r.payload}]`).join(',')}]`;
}

/** A row's instant as COPY stores it, in microseconds since PostgreSQL's epoch. */
function storedMicros(row: ReadingRow): number {
  const micros = postgresMicros(row.ts);
  if (!Number.isSafeInteger(micros)) throw new RangeError(`instant ${row.ts} is outside what a reading can be stored at`);
  return micros;
}

const RETRYABLE = new Set(['40P01', '40001']);
const NO_PARTITION = '23514';
const DUPLICATE_KEY = '23505';

/** A number as SQL text (finite by validation). */
const numeric = (value: number) => (Number.isFinite(value) ? String(value) : 'NULL');

/**
 * The outbox lock, then the alerts into the outbox (two statements; the insert is the second). The
 * transaction must do nothing after them but COMMIT: the lock makes every other batch with alerts wait
 * until then.
 */
function outboxSql(alerts: readonly AlertEvent[]): string {
  const lit = (value: string) => pg.escapeLiteral(value);
  const values = alerts.map((a) => `(${lit(a.alertId)}, ${lit(alertKeyOf(a))}, ${lit(JSON.stringify(a))}::jsonb)`).join(', ');
  return `SELECT pg_advisory_xact_lock(${OUTBOX_LOCK});\nINSERT INTO alert_outbox (alert_id, message_key, payload) VALUES ${values} ON CONFLICT (alert_id) DO NOTHING`;
}

/**
 * Round trip 2: the COPY of the rows, the late hours not marked yet marked for a new rollup, then the
 * outbox lock and the alerts into the outbox, and COMMIT.
 */
function closingSql(alerts: readonly AlertEvent[], lateHours: readonly number[]): { sql: string; alerts: number } {
  const statements = ['COPY readings (building_id, room_id, metric, ts, value, payload) FROM STDIN (FORMAT binary)'];
  if (lateHours.length > 0) {
    statements.push(`INSERT INTO rollup_pending (hour) VALUES ${lateHours.map((hour) => `(to_timestamp(${numeric(hour)} / 1000.0))`).join(', ')} ON CONFLICT DO NOTHING`);
  }
  let alertsAt = -1;
  if (alerts.length > 0) {
    // The lock, then the insert: its tag is the second.
    alertsAt = statements.length + 1;
    statements.push(outboxSql(alerts));
  }
  statements.push('COMMIT');
  return { sql: statements.join(';\n'), alerts: alertsAt };
}

/**
 * The hours of the batch (each that of its earliest instant, as stored) that are before the rollup
 * watermark, so a rollup closed them without these readings, and are not marked for a new rollup yet.
 * The shared rollup lock, held from round trip 1 to COMMIT, keeps the rollup from taking a mark away
 * in between; a mark another batch has not committed yet is made again (ON CONFLICT DO NOTHING).
 */
export function lateHoursToMark(hours: readonly number[], watermark: number | null, pending: readonly number[]): number[] {
  if (watermark === null) return [];
  // Ascending: every transaction marking the same hours locks their rows in one order (no deadlock).
  return hours.filter((hour) => hour < watermark && !pending.includes(hour)).sort((a, b) => a - b);
}

/** The UTC day (days since the epoch) an instant is stored in. */
const dayOf = (ms: number) => Math.floor(storedInstant(ms) / DAY_MS);

/** A batch's rows in key order, and what the transaction needs to know of them. */
interface KeyedRows {
  /** The rows sorted by key (batch order among equal keys): rows[k] is the batch's row order[k]. */
  rows: ReadingRow[];
  order: number[];
  buildings: string[];
  /** The earliest instant as stored (ms): compared with the raw data still kept as the rows will be. */
  oldest: number;
  /** Each UTC hour (ms) the batch is stored in. */
  hours: number[];
}

/**
 * Sorts the rows by key. The write path is kept in small synchronous functions like this one: a large
 * async method that inlines all of them is slow for V8 to optimise, and it was optimised anew
 * whenever the shapes it met changed.
 */
function inKeyOrder(batchRows: readonly ReadingRow[]): KeyedRows {
  const order = keyOrder(batchRows);
  const rows: ReadingRow[] = [];
  const buildings: string[] = [];
  let oldest = Infinity;
  const hours = new Set<number>();
  for (const i of order) {
    const r = batchRows[i]!;
    if (r.buildingId !== rows[rows.length - 1]?.buildingId) buildings.push(r.buildingId);
    rows.push(r);
    // As stored: a reading a fraction of a microsecond before the hour is stored at the hour
    // (storedInstant), and that hour must be marked when it is late, not the one before.
    const stored = storedInstant(r.ts);
    if (stored < oldest) oldest = stored;
    hours.add(Math.floor(stored / HOUR_MS) * HOUR_MS);
  }
  return { rows, order, buildings, oldest, hours: [...hours] };
}

/**
 * The rows in the order the store copies them (by key, batch order among equal keys): for the
 * benchmark's COPY limit, which copies the same rows the same way.
 */
export function rowsInKeyOrder(rows: readonly ReadingRow[]): ReadingRow[] {
  return keyOrder(rows).map((i) => rows[i]!);
}

/**
 * Positions of the rows sorted by {@link byKey}, batch order among equal keys. The rows are first
 * grouped by building, room and metric, whose few distinct values are sorted once; a group's rows
 * (usually already in time order) are sorted only if they are not.
 */
function keyOrder(rows: readonly ReadingRow[]): number[] {
  const groups = new Map<string, Map<string, Map<string, number[]>>>();
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i]!;
    let rooms = groups.get(r.buildingId);
    if (rooms === undefined) groups.set(r.buildingId, (rooms = new Map()));
    let metrics = rooms.get(r.roomId);
    if (metrics === undefined) rooms.set(r.roomId, (metrics = new Map()));
    const group = metrics.get(r.metric);
    if (group === undefined) metrics.set(r.metric, [i]);
    else group.push(i);
  }
  const byTimeThenOrigin = (a: number, b: number) => byKey(rows[a]!, rows[b]!) || a - b;
  const order: number[] = [];
  for (const building of [...groups.keys()].sort(byText)) {
    const rooms = groups.get(building)!;
    for (const room of [...rooms.keys()].sort(byText)) {
      const metrics = rooms.get(room)!;
      for (const metric of [...metrics.keys()].sort(byText)) {
        const group = metrics.get(metric)!;
        let sorted = true;
        for (let k = 1; k < group.length && sorted; k++) sorted = byTimeThenOrigin(group[k - 1]!, group[k]!) < 0;
        if (!sorted) group.sort(byTimeThenOrigin);
        for (const i of group) order.push(i);
      }
    }
  }
  return order;
}

/** Code-unit order, as byKey compares ids. */
const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Indexes of the rows stored before `horizon`. */
function olderThan(rows: readonly ReadingRow[], horizon: number): number[] {
  return rows.flatMap((row, i) => (storedInstant(row.ts) < horizon ? [i] : []));
}

/**
 * The batch's alerts under the thresholds read, in outbox order. Outbox order is relay order, and a
 * room's alerts share a Kafka partition: oldest reading first. The id breaks ties, so the order is
 * fixed by the alerts themselves (an id holds its timestamp) and two batches sharing alerts take
 * their outbox rows in one order.
 */
function alertsInOutboxOrder(batch: StoredBatch, thresholdRows: readonly unknown[]): RaisedAlert[] {
  const thresholds = (thresholdRows as Array<{ building_id: string; room_id: string | null; metric: string; bounds: Record<string, number> }>).map((r) => ({
    buildingId: r.building_id,
    roomId: r.room_id,
    metric: r.metric,
    bounds: r.bounds,
  }));
  return [...batch.alertsFor(thresholds)].sort(
    (a, b) => a.alert.timestamp - b.alert.timestamp || (a.alert.alertId < b.alert.alertId ? -1 : a.alert.alertId > b.alert.alertId ? 1 : 0),
  );
}

/** The row count of a command tag (`COPY 500`, `INSERT 0 3`). */
const tagCount = (tag: string | undefined) => Number(/(\d+)$/.exec(tag ?? '')?.[1] ?? 0);

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
      const day = dayOf(ms);
      if (!this.knownDays.has(day)) days.add(day);
    }
    if (days.size > 0) await this.createPartitions(days);
  }

  /** The days of these rows without a partition this instance knows of (none, for the common batch). */
  private missingDays(rows: readonly ReadingRow[]): Set<number> | undefined {
    let days: Set<number> | undefined;
    for (let i = 0; i < rows.length; i++) {
      const day = dayOf(rows[i]!.ts);
      if (!this.knownDays.has(day)) (days ??= new Set()).add(day);
    }
    return days;
  }

  private async createPartitions(days: Iterable<number>): Promise<void> {
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
      const missing = this.missingDays(batch.rows);
      if (missing) await this.createPartitions(missing);
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
      // A stored batch was committed with its last statement; the others end here.
      const outcome = await this.write(client, batch, keepFirst);
      if (outcome.kind !== 'stored') await client.query('ROLLBACK');
      return outcome;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  private async write(client: PoolClient, batch: StoredBatch, keepFirst: boolean): Promise<StoreOutcome> {
    const keyed = inKeyOrder(batch.rows);
    const { hours } = keyed;
    const state = await open(client, {
      keyId: batch.keyId,
      batchId: batch.batchId,
      accepted: batch.rows.length,
      oldest: keyed.oldest,
      buildings: keyed.buildings,
      boundedMetrics: batch.boundedMetrics,
      hours,
    });
    if (state?.fresh === false) return { kind: 'too_old', indexes: olderThan(batch.rows, state.retained_from ?? -Infinity) };
    if (state?.claimed === false) {
      const first = await client.query<{ accepted: number }>('SELECT accepted FROM ingest_batches WHERE key_id = $1 AND batch_id = $2', [batch.keyId, batch.batchId]);
      return { kind: 'duplicate', accepted: first.rows[0]?.accepted ?? batch.rows.length };
    }
    const raised = alertsInOutboxOrder(batch, state?.thresholds ?? []);
    if (keepFirst) return this.writeKeepingFirst(client, batch, keyed, raised);
    // COPY stores every row (a repeat fails it, and the batch is written again keeping the first copy)
    const closing = closingSql(
      raised.map((r) => r.alert),
      lateHoursToMark(hours, state?.watermark ?? null, state?.pending ?? []),
    );
    const tags = await copyIn(client, closing.sql, binaryCopyRows(keyed.rows));
    return { kind: 'stored', accepted: batch.rows.length, inserted: tagCount(tags[0]), alerts: closing.alerts >= 0 ? tagCount(tags[closing.alerts]) : 0 };
  }

  /**
   * The batch again, in a transaction whose claim is already made, keeping the stored copy of every
   * reading it repeats; commits it.
   */
  private async writeKeepingFirst(client: PoolClient, batch: StoredBatch, keyed: KeyedRows, raised: readonly RaisedAlert[]): Promise<StoreOutcome> {
    const { order } = keyed;
    const result = await client.query<{ fresh: boolean; stored: boolean; inserted: number; stored_elements: number[] }>({
      name: 'telemetry-ingest-batch-keep-first',
      text: INGEST_KEEPING_FIRST,
      values: [batch.keyId, null, batch.rows.length, rowsJson(keyed.rows), keyed.oldest, keyed.hours],
    });
    const outcome = result.rows[0];
    // Elements are numbered from 1, in key order.
    const storedIndexes = (outcome?.stored_elements ?? []).map((element) => order[element - 1]!).sort((a, b) => a - b);
    // Only a reading this batch stored raises its alerts; they go in last, under the outbox lock.
    const stored = new Set(storedIndexes);
    const alerts = raised.filter((r) => stored.has(r.reading)).map((r) => r.alert);
    let queued = 0;
    if (alerts.length === 0) await client.query('COMMIT');
    else {
      // The lock, the insert and COMMIT in one message: no round trip while the lock is held.
      const results = (await client.query(`${outboxSql(alerts)};\nCOMMIT`)) as unknown as pg.QueryResult[];
      queued = results[1]?.rowCount ?? 0;
    }
    return { kind: 'stored', accepted: batch.rows.length, inserted: outcome?.inserted ?? 0, alerts: queued, storedIndexes };
  }
}
