/**
 * PostgreSQL adapter for the retention job: roll every closed UTC hour up into `readings_hourly`
 * (applying the privacy floor to count metrics), then drop day partitions older than the retention
 * whose hours are all rolled up. One transaction under the exclusive rollup lock.
 *
 * A run can be called off (the service stopping): its statement is cancelled on the server and the
 * transaction rolled back, so nothing of it is kept and the watermark does not move; the next run
 * does the same work again. A first rollup after a long outage covers every hour since, and a stop
 * would otherwise wait for all of it.
 */
import type { Pool, PoolClient, QueryResult, QueryResultRow } from 'pg';
import { dayOfPartition, droppablePartitions, floorHour } from '../domain/utc.js';
import { ROLLUP_LOCK } from './locks.js';

export interface RetentionPolicy {
  /** The instant the job treats as now (injected in tests). */
  now: number;
  /** Raw readings are kept this long (14 days). */
  retentionMs: number;
  /** Count values strictly between 0 and the floor are not kept in retained buckets. */
  privacyFloor: number;
  /** Metric keys whose retained buckets obey the floor. */
  countMetrics: readonly string[];
  /** Sent outbox rows and batch ids are forgotten after this long. */
  bookkeepingMs: number;
}

export interface RetentionReport {
  /** Hour buckets written (new or recomputed). */
  buckets: number;
  /** Hours recomputed because late readings arrived after they were rolled up. */
  lateHours: number;
  dropped: string[];
  watermark: number;
}

/**
 * A numeric sum or average as a double, never an error: PostgreSQL makes a double a numeric of 15
 * significant digits, so one reading of the largest double (1.7976931348623157e308) averages to
 * 1.79769313486232e308, past what a double holds, and a tiny non-zero average (5e-324, 0 and 0) is
 * below what one holds; casting either back fails the statement, and with it every rollup and
 * partition drop behind it. Past the largest double it is NULL, below the smallest normal one 0.
 */
function asDouble(v: string): string {
  return `CASE WHEN abs(${v}) > 1.7976931348623157e308 THEN NULL WHEN abs(${v}) < 2.2250738585072014e-308 THEN 0 ELSE ${v}::float8 END`;
}

/**
 * Aggregates one hour range. For count metrics, a min, max or avg strictly between 0 and the floor is
 * stored as NULL. Whenever any value is withheld, or any reading of the hour lies strictly between 0
 * and the floor, the sum and the avg are withheld with it: with the count, either gives the other back;
 * with the max it gives a withheld min back (two readings, 1 and 10: min = sum − max); and with the
 * min and max it gives back a reading between them (0, 1 and 20: 21 − 0 − 20 = 1). The min and max
 * alone never give each other away. `suppressed` says a value was withheld.
 *
 * The sum and the avg are taken in numeric, so readings near the double-precision limit cannot make
 * the statement fail (a float8 sum of 1.7e308 and 1.7e308 is an error, which would stop every rollup
 * and every partition drop behind it), and are turned back into doubles by {@link asDouble}.
 */
function rollupSql(where: string): string {
  const s = (v: string) => `(counted AND ${v} > 0 AND ${v} < $2)`;
  return `
WITH agg AS (
  SELECT building_id, room_id, metric, date_trunc('hour', ts, 'UTC') AS hour,
         count(*) AS n, min(value) AS mn, max(value) AS mx, sum(value::numeric) AS sm, avg(value::numeric) AS av,
         bool_or(value > 0 AND value < $2) AS some_low,
         metric = ANY($1::text[]) AS counted
  FROM readings WHERE ${where}
  GROUP BY building_id, room_id, metric, date_trunc('hour', ts, 'UTC')
)
INSERT INTO readings_hourly AS h (building_id, room_id, metric, hour, count, min, max, sum, avg, suppressed)
SELECT building_id, room_id, metric, hour, n,
       CASE WHEN ${s('mn')} THEN NULL ELSE mn END,
       CASE WHEN ${s('mx')} THEN NULL ELSE mx END,
       CASE WHEN withheld THEN NULL ELSE ${asDouble('sm')} END,
       CASE WHEN withheld THEN NULL ELSE ${asDouble('av')} END,
       withheld
FROM (SELECT agg.*, ${s('mn')} OR ${s('mx')} OR ${s('sm')} OR ${s('av')} OR (counted AND some_low) AS withheld FROM agg) AS checked
ON CONFLICT (building_id, room_id, metric, hour) DO UPDATE
SET count = EXCLUDED.count, min = EXCLUDED.min, max = EXCLUDED.max, sum = EXCLUDED.sum, avg = EXCLUDED.avg, suppressed = EXCLUDED.suppressed`;
}

const ROLLUP_WINDOW = rollupSql('ts < $4 AND ($3::timestamptz IS NULL OR ts >= $3)');
const ROLLUP_PENDING = rollupSql(`date_trunc('hour', ts, 'UTC') = ANY($3::timestamptz[]) AND ts >= $4 AND ts < $5`);

/** One statement of the run's transaction. */
type Query = <R extends QueryResultRow = QueryResultRow>(text: string, values?: unknown[]) => Promise<QueryResult<R>>;

/** A run called off before it finished: it changed nothing. */
export class RetentionCancelled extends Error {
  constructor() {
    super('rollup and retention called off');
    this.name = 'RetentionCancelled';
  }
}

export class PgRetentionStore {
  constructor(private readonly pool: Pool) {}

  /**
   * Rolls up, then drops what may be dropped. Returns what it did. When `signal` aborts first, the
   * statement under way is cancelled and the run rejects with {@link RetentionCancelled}, having
   * changed nothing.
   */
  async run(policy: RetentionPolicy, signal?: AbortSignal): Promise<RetentionReport> {
    if (signal?.aborted) throw new RetentionCancelled();
    const client = await this.pool.connect();
    let cancelling: Promise<unknown> | undefined;
    const cancel = () => {
      // Another connection asks the server to cancel this one's statement (a lock wait included).
      cancelling = this.pool.query('SELECT pg_cancel_backend($1)', [(client as PoolClient & { processID: number }).processID]).catch(() => undefined);
    };
    signal?.addEventListener('abort', cancel, { once: true });
    // A cancel that lands between two statements finds the connection idle and is ignored by the
    // server: the next statement is then not sent.
    const query: Query = (text, values) => {
      if (signal?.aborted) throw new RetentionCancelled();
      return client.query(text, values);
    };
    let report: RetentionReport;
    try {
      await query('BEGIN');
      await query('SELECT pg_advisory_xact_lock($1)', [ROLLUP_LOCK]);
      report = await this.rollUpAndDrop(query, policy);
      await query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw signal?.aborted ? new RetentionCancelled() : err;
    } finally {
      signal?.removeEventListener('abort', cancel);
      // A cancel may still be on its way: this connection is closed rather than handed to a query
      // the cancel could then hit.
      await cancelling;
      client.release(signal?.aborted === true);
    }
    // Committed: the report stands whatever follows. The bookkeeping is left to the next run when the
    // stop came meanwhile (its deletes are not the rollup's, and nothing depends on them being prompt).
    if (!signal?.aborted) await this.forget(policy);
    return report;
  }

  private async rollUpAndDrop(query: Query, policy: RetentionPolicy): Promise<RetentionReport> {
    const state = await query<{ watermark: Date | null }>('SELECT watermark FROM rollup_state');
    const previous = state.rows[0]?.watermark ?? null;
    const closed = floorHour(policy.now);
    const params = [policy.countMetrics, policy.privacyFloor];
    let buckets = 0;

    const pending = (await query<{ hour: Date }>('SELECT hour FROM rollup_pending WHERE hour < $1 ORDER BY hour', [new Date(closed)])).rows.map((r) => r.hour);
    if (pending.length > 0) {
      const first = pending[0]!.getTime();
      const last = pending[pending.length - 1]!.getTime() + 3_600_000;
      buckets += (await query(ROLLUP_PENDING, [...params, pending, new Date(first), new Date(last)])).rowCount ?? 0;
      await query('DELETE FROM rollup_pending WHERE hour = ANY($1::timestamptz[])', [pending]);
    }
    if (previous === null || previous.getTime() < closed) {
      buckets += (await query(ROLLUP_WINDOW, [...params, previous, new Date(closed)])).rowCount ?? 0;
      await query('UPDATE rollup_state SET watermark = $1', [new Date(closed)]);
    }
    const watermark = Math.max(previous?.getTime() ?? closed, closed);

    const partitions = await query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'readings'::regclass`,
    );
    const stillPending = (await query<{ hour: Date }>('SELECT hour FROM rollup_pending')).rows.map((r) => r.hour.getTime());
    const dropped = droppablePartitions(
      partitions.rows.map((r) => r.name),
      policy.now,
      policy.retentionMs,
      { watermark, pendingHours: stillPending },
    ).sort();
    for (const name of dropped) {
      // `name` matched readings_pYYYYMMDD in droppablePartitions, so it is a safe identifier.
      await query(`DROP TABLE ${name}`);
    }
    if (dropped.length > 0) {
      const horizon = Math.max(...dropped.map((name) => dayOfPartition(name)?.end ?? 0));
      await query('UPDATE rollup_state SET retained_from = GREATEST(retained_from, $1::timestamptz)', [new Date(horizon)]);
    }
    return { buckets, lateHours: pending.length, dropped, watermark };
  }

  /** Bookkeeping that needs no lock: relayed alerts and old batch ids. */
  private async forget(policy: RetentionPolicy): Promise<void> {
    const before = new Date(policy.now - policy.bookkeepingMs);
    await this.pool.query('DELETE FROM alert_outbox WHERE sent_at IS NOT NULL AND sent_at < $1', [before]);
    await this.pool.query('DELETE FROM ingest_batches WHERE received_at < $1', [before]);
  }
}
