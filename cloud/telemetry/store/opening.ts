/**
 * Round trip 1 of a batch's transaction with prepared statements: BEGIN, the shared rollup lock and
 * the opening statement (the rollup state as this batch sees it, the thresholds in force, the late
 * hours already pending, and the claim of the batch id) are three named statements, bound and executed
 * in one message with one Sync. PostgreSQL keeps their parse and plan: the opening statement in the
 * simple protocol cost it about as much again as executing it. The statements are parsed once per
 * connection ({@link prepareOpening}, one round trip the first time).
 */
import type pg from 'pg';
import { ROLLUP_LOCK } from './locks.js';
import { Exchange, type ExchangeConnection } from './pg-exchange.js';

const BEGIN = 'telemetry-ingest-begin';
const LOCK = 'telemetry-ingest-rollup-lock';
const OPEN = 'telemetry-ingest-open';

/**
 * The shared rollup lock, and the generic plan for the rest of the transaction. The opening statement's
 * plan does not depend on its parameters, but PostgreSQL, comparing estimates on small tables without
 * statistics, kept planning it anew for every batch, and planning took about twice as long as
 * executing (tools/bench/telemetry/opening-plan.ts measures both). set_config(…, true) lasts until
 * the transaction ends, like SET LOCAL. The rest of the transaction is no worse for it: the COPY
 * message goes by the simple protocol, planned once anyway, and the statements of the rare batch
 * that repeats readings (a lookup by primary key, the keep-first insert from a jsonb parameter) have
 * no estimate a parameter's value would change.
 */
const LOCK_SQL = `SELECT pg_advisory_xact_lock_shared(${ROLLUP_LOCK}), set_config('plan_cache_mode', 'force_generic_plan', true)`;

/**
 * $1 key id, $2 batch id (null: nothing to claim), $3 readings accepted, $4 the oldest instant (ms),
 * $5 the batch's buildings, $6 its metrics with bounds, $7 the hours (ms) of the batch. The claim is
 * made only if no reading is older than the raw data still kept. Instants are in milliseconds.
 */
export const OPENING_SQL = `
WITH state AS (
  SELECT NOT coalesce(retained_from > to_timestamp($4::float8 / 1000.0), false) AS fresh,
         (extract(epoch FROM retained_from) * 1000)::float8 AS retained_from,
         (extract(epoch FROM watermark) * 1000)::float8 AS watermark
  FROM rollup_state
), claim AS (
  INSERT INTO ingest_batches (key_id, batch_id, accepted)
  SELECT $1::text, $2::text, $3::int
  WHERE $2::text IS NOT NULL AND NOT EXISTS (SELECT 1 FROM rollup_state WHERE retained_from > to_timestamp($4::float8 / 1000.0))
  ON CONFLICT DO NOTHING RETURNING 1
)
SELECT (SELECT fresh FROM state) AS fresh,
       (SELECT retained_from FROM state) AS retained_from,
       CASE WHEN $2::text IS NULL THEN NULL ELSE EXISTS (SELECT 1 FROM claim) END AS claimed,
       (SELECT coalesce(json_agg(json_build_object('building_id', building_id, 'room_id', room_id, 'metric', metric, 'bounds', bounds)), '[]')
        FROM thresholds WHERE building_id = ANY($5::text[]) AND metric = ANY($6::text[])) AS thresholds,
       (SELECT watermark FROM state) AS watermark,
       (SELECT coalesce(json_agg(h), '[]') FROM unnest($7::float8[]) AS u(h)
        WHERE EXISTS (SELECT 1 FROM rollup_pending p WHERE p.hour = to_timestamp(h / 1000.0))) AS pending`;

/** The batch's state as round trip 1 reads it. */
export interface OpeningState {
  /** false when a reading is older than the raw data still kept (null without a rollup state row). */
  fresh: boolean | null;
  retained_from: number | null;
  /** Whether the batch id was claimed now (null when the batch has no id). */
  claimed: boolean | null;
  /** The thresholds in force for the batch's buildings and bounded metrics. */
  thresholds: Array<{ building_id: string; room_id: string | null; metric: string; bounds: Record<string, number> }>;
  /** Every hour before it is rolled up (ms; null before the first rollup). */
  watermark: number | null;
  /** The hours of the batch already marked for a new rollup (ms). */
  pending: number[];
}

export interface OpeningParams {
  keyId: string;
  batchId: string | undefined;
  accepted: number;
  oldest: number;
  buildings: readonly string[];
  boundedMetrics: readonly string[];
  hours: readonly number[];
}

interface ExtendedConnection extends ExchangeConnection {
  parse(query: { name: string; text: string; types: number[] }): void;
  bind(config: { statement: string; values: Array<string | null> }): void;
  execute(config: Record<string, never>): void;
  sync(): void;
}

/** An element of a text[] parameter, quoted for the array literal. */
const arrayText = (value: string) => `"${value.replace(/[\\"]/g, (c) => `\\${c}`)}"`;

/** Doubles as float8 text: JavaScript's shortest form reads back as the same double. */
const float8 = (value: number) => (Number.isFinite(value) ? String(value) : value > 0 ? 'Infinity' : value < 0 ? '-Infinity' : 'NaN');

class Prepare extends Exchange<void, ExtendedConnection> {
  protected send(connection: ExtendedConnection): void {
    connection.parse({ name: BEGIN, text: 'BEGIN', types: [] });
    connection.parse({ name: LOCK, text: LOCK_SQL, types: [] });
    connection.parse({ name: OPEN, text: OPENING_SQL, types: [] });
    connection.sync();
  }

  protected result(): void {}
}

class Open extends Exchange<OpeningState | undefined, ExtendedConnection> {
  constructor(private readonly values: Array<string | null>) {
    // BEGIN completes first, then the lock's SELECT: the opening statement's row comes third.
    super(2);
  }

  protected send(connection: ExtendedConnection): void {
    connection.bind({ statement: BEGIN, values: [] });
    connection.execute({});
    connection.bind({ statement: LOCK, values: [] });
    connection.execute({});
    connection.bind({ statement: OPEN, values: this.values });
    connection.execute({});
    connection.sync();
  }

  protected result(): OpeningState | undefined {
    const row = this.row;
    if (row === undefined) return undefined;
    const bool = (text: string | null) => (text === null ? null : text === 't');
    const num = (text: string | null) => (text === null ? null : Number(text));
    return {
      fresh: bool(row[0] ?? null),
      retained_from: num(row[1] ?? null),
      claimed: bool(row[2] ?? null),
      thresholds: row[3] == null ? [] : (JSON.parse(row[3]) as OpeningState['thresholds']),
      watermark: num(row[4] ?? null),
      pending: row[5] == null ? [] : (JSON.parse(row[5]) as number[]),
    };
  }
}

/** Clients whose connection holds the three statements. */
const prepared = new WeakSet<object>();

/** Parses the statements on this client's connection, unless done before. */
export async function prepareOpening(client: pg.PoolClient | pg.Client): Promise<void> {
  if (prepared.has(client)) return;
  const prepare = new Prepare();
  client.query(prepare as unknown as pg.Submittable);
  await prepare.done;
  prepared.add(client);
}

/**
 * Round trip 1: BEGIN, the shared rollup lock, then the opening statement, which reads the state once
 * the lock is held. Undefined without a rollup state row.
 */
export async function open(client: pg.PoolClient | pg.Client, params: OpeningParams): Promise<OpeningState | undefined> {
  await prepareOpening(client);
  const values = [
    params.keyId,
    params.batchId ?? null,
    String(params.accepted),
    float8(params.oldest),
    `{${params.buildings.map(arrayText).join(',')}}`,
    `{${params.boundedMetrics.map(arrayText).join(',')}}`,
    `{${params.hours.map(float8).join(',')}}`,
  ];
  const opening = new Open(values);
  client.query(opening as unknown as pg.Submittable);
  return opening.done;
}
