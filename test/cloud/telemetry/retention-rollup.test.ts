import t from 'tap';
import { RetentionJob } from '../../../cloud/telemetry/retention.js';
import { DAY_MS, HOUR_MS, droppablePartitions } from '../../../cloud/telemetry/domain/utc.js';
import { ROLLUP_LOCK } from '../../../cloud/telemetry/store/locks.js';
import { PgRetentionStore } from '../../../cloud/telemetry/store/retention.js';
import { silentLogger } from '../../../shared/logger.js';
import { SHARED_KEY, peopleReading, startHarness, temperatureReading, until, type Harness } from './support/harness.js';

const at = (iso: string) => Date.parse(iso);

function retentionJob(h: Harness, privacyFloor = 5) {
  return new RetentionJob({
    store: new PgRetentionStore(h.pool),
    onDropped: (name) => h.readings.forgetPartition(name),
    clock: () => h.clock.now,
    privacyFloor,
    logger: silentLogger(),
  });
}

/** Ingests readings with the service clock at `now` (readings must be within 14 days of it). */
async function ingestAt(h: Harness, now: number, readings: unknown[]) {
  h.clock.now = now;
  return h.ingest.ingest(SHARED_KEY, { readings });
}

async function partitions(h: Harness): Promise<string[]> {
  const { rows } = await h.pool.query<{ name: string }>(`SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'readings'::regclass ORDER BY 1`);
  return rows.map((r) => r.name);
}

async function buckets(h: Harness) {
  const { rows } = await h.pool.query(
    `SELECT room_id, metric, to_char(hour AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI"Z"') AS hour, count::int AS count, min, max, sum, avg, suppressed
     FROM readings_hourly ORDER BY hour, room_id, metric`,
  );
  return rows as Array<{ room_id: string; metric: string; hour: string; count: number; min: number | null; max: number | null; sum: number | null; avg: number | null; suppressed: boolean }>;
}

async function rawCount(h: Harness): Promise<number> {
  const { rows } = await h.pool.query<{ n: string }>('SELECT count(*) AS n FROM readings');
  return Number(rows[0]?.n);
}

t.test('raw days older than 14 days are dropped while their hours remain', async (t) => {
  const h = await startHarness(t);
  const job = retentionJob(h);
  // Day 0 is 2024-06-01; readings on days 0, 1, 10 and 16, each ingested while recent.
  await ingestAt(h, at('2024-06-01T12:00:00Z'), [
    temperatureReading('b1', 'r1', at('2024-06-01T09:10:00Z'), 20),
    temperatureReading('b1', 'r1', at('2024-06-01T09:50:00Z'), 22),
    temperatureReading('b1', 'r1', at('2024-06-01T23:59:59.999Z'), 25),
  ]);
  await ingestAt(h, at('2024-06-02T12:00:00Z'), [temperatureReading('b1', 'r1', at('2024-06-02T00:00:00Z'), 30)]);
  await ingestAt(h, at('2024-06-11T12:00:00Z'), [temperatureReading('b1', 'r1', at('2024-06-11T08:00:00Z'), 21)]);
  await ingestAt(h, at('2024-06-17T06:00:00Z'), [temperatureReading('b1', 'r1', at('2024-06-17T05:30:00Z'), 19)]);
  t.same(await partitions(h), ['readings_p20240601', 'readings_p20240602', 'readings_p20240611', 'readings_p20240617'], 'one partition per UTC day, created on demand');

  h.clock.now = at('2024-06-16T00:00:00Z');
  const first = await job.runOnce();
  t.same(first.dropped, ['readings_p20240601'], 'exactly 14 days after its end, day 0 goes');
  t.same(await partitions(h), ['readings_p20240602', 'readings_p20240611', 'readings_p20240617']);
  t.equal(await rawCount(h), 3);
  const kept = await buckets(h);
  t.same(kept.slice(0, 2), [
    { room_id: 'r1', metric: 'temperature', hour: '2024-06-01T09:00Z', count: 2, min: 20, max: 22, sum: 42, avg: 21, suppressed: false },
    { room_id: 'r1', metric: 'temperature', hour: '2024-06-01T23:00Z', count: 1, min: 25, max: 25, sum: 25, avg: 25, suppressed: false },
  ], 'the dropped day is still there, hour by hour');
  t.equal(kept.length, 4, 'every closed hour is rolled up, the still-open hour of 06-17 is not');

  h.clock.now = at('2024-06-17T05:45:00Z');
  const second = await job.runOnce();
  t.same(second.dropped, ['readings_p20240602']);
  t.equal((await buckets(h)).length, 4, 'nothing rolled up twice; the current hour is still open');

  h.clock.now = at('2024-07-15T00:00:00Z');
  await job.runOnce();
  t.same(await partitions(h), [], 'everything older than 14 days is gone');
  t.same((await buckets(h)).map((b) => b.hour), ['2024-06-01T09:00Z', '2024-06-01T23:00Z', '2024-06-02T00:00Z', '2024-06-11T08:00Z', '2024-06-17T05:00Z'], 'kept forever');
});

t.test('a late reading for an hour already rolled up is rolled up again before its day is dropped', async (t) => {
  const h = await startHarness(t);
  const job = retentionJob(h);
  await ingestAt(h, at('2024-06-01T10:30:00Z'), [temperatureReading('b1', 'r1', at('2024-06-01T09:15:00Z'), 20)]);
  h.clock.now = at('2024-06-01T10:30:00Z');
  await job.runOnce();
  t.match((await buckets(h))[0], { hour: '2024-06-01T09:00Z', count: 1, max: 20 });

  // A gateway that was offline sends the rest of 09:00 later that day.
  await ingestAt(h, at('2024-06-01T18:00:00Z'), [temperatureReading('b1', 'r1', at('2024-06-01T09:45:00Z'), 26)]);
  const { rows } = await h.pool.query(`SELECT to_char(hour AT TIME ZONE 'UTC', 'HH24:MI') AS hour FROM rollup_pending`);
  t.same(rows, [{ hour: '09:00' }], 'the hour is marked for another rollup');

  // The late hour's day is already droppable at this run: it must be rolled up first.
  h.clock.now = at('2024-06-16T00:00:00Z');
  const report = await job.runOnce();
  t.equal(report.lateHours, 1);
  t.same(report.dropped, ['readings_p20240601']);
  t.match((await buckets(h))[0], { hour: '2024-06-01T09:00Z', count: 2, min: 20, max: 26, sum: 46 }, 'the late reading is in the kept hour');

  const tooLate = await h.ingest.ingest(SHARED_KEY, { readings: [temperatureReading('b1', 'r1', at('2024-06-01T20:00:00Z'), 30)] }).catch((e: unknown) => e);
  t.match(tooLate, { status: 400 }, 'a reading for a dropped day is refused, not silently lost');

  // A replica whose clock lags still cannot write into the dropped day: the stored horizon says no.
  h.clock.now = at('2024-06-15T12:00:00Z');
  const lagging = await h.ingest.ingest(SHARED_KEY, { readings: [temperatureReading('b1', 'r1', at('2024-06-01T20:00:00Z'), 30)] }).catch((e: unknown) => e);
  t.match(lagging, { status: 400, message: /older than the raw data still kept/ });
  t.equal(await rawCount(h), 0);
  h.clock.now = at('2024-06-16T00:05:00Z');
  t.same((await job.runOnce()).dropped, ['readings_p20240601'], 'the empty partition it recreated goes again');
  t.match((await buckets(h))[0], { count: 2 }, 'and the kept hour is untouched');
});

t.test('a repeat of an accepted batch answers its first result even once a replica ahead dropped its day', async (t) => {
  const h = await startHarness(t);
  const job = retentionJob(h);
  const batch = { batchId: 'b1@2024-06-01T10:00:00.000Z', readings: [temperatureReading('b1', 'r1', at('2024-06-01T09:15:00Z'), 20)] };
  h.clock.now = at('2024-06-01T10:00:00Z');
  t.same(await h.ingest.ingest(SHARED_KEY, batch), { accepted: 1 });
  await job.runOnce();

  // The retention job on a replica whose clock is ahead drops the day; this replica's clock still
  // validates the reading, 15 minutes inside the 14 days.
  h.clock.now = at('2024-06-16T00:00:00Z');
  t.same((await job.runOnce()).dropped, ['readings_p20240601']);
  h.clock.now = at('2024-06-15T09:00:00Z');
  t.same(await h.ingest.ingest(SHARED_KEY, batch), { accepted: 1 }, 'the first result, not a 400');
  t.equal(await rawCount(h), 0, 'nothing stored again');
});

t.test('the drop rule never takes a day with an hour not rolled up', async (t) => {
  const now = at('2024-06-20T00:00:00Z');
  const names = ['readings_p20240601', 'readings_p20240602', 'readings_p20240605', 'readings_p20240619', 'not_a_partition'];
  t.same(droppablePartitions(names, now, 14 * DAY_MS, { watermark: now, pendingHours: [] }), ['readings_p20240601', 'readings_p20240602', 'readings_p20240605']);
  t.same(droppablePartitions(names, now, 14 * DAY_MS, { watermark: null, pendingHours: [] }), [], 'nothing rolled up yet: nothing dropped');
  t.same(droppablePartitions(names, now, 14 * DAY_MS, { watermark: at('2024-06-02T05:00:00Z'), pendingHours: [] }), ['readings_p20240601'], 'only days wholly before the watermark');
  t.same(
    droppablePartitions(names, now, 14 * DAY_MS, { watermark: now, pendingHours: [at('2024-06-02T23:00:00Z')] }),
    ['readings_p20240601', 'readings_p20240605'],
    'a day with a pending hour stays',
  );
});

t.test('the privacy floor: count buckets under the floor are kept as null with suppressed=true', async (t) => {
  const h = await startHarness(t);
  const job = retentionJob(h, 5);
  const hour = (n: number, minute: number) => at(`2024-06-01T0${n}:${String(minute).padStart(2, '0')}:00Z`);
  await ingestAt(h, at('2024-06-01T09:30:00Z'), [
    peopleReading('b1', 'solo', hour(1, 0), 1),
    peopleReading('b1', 'small', hour(2, 0), 1),
    peopleReading('b1', 'small', hour(2, 10), 2),
    peopleReading('b1', 'small', hour(2, 20), 3),
    peopleReading('b1', 'mixed', hour(3, 0), 0),
    peopleReading('b1', 'mixed', hour(3, 10), 0),
    peopleReading('b1', 'mixed', hour(3, 20), 10),
    peopleReading('b1', 'pair', hour(8, 0), 1),
    peopleReading('b1', 'pair', hour(8, 10), 10),
    peopleReading('b1', 'busy', hour(4, 0), 6),
    peopleReading('b1', 'busy', hour(4, 10), 8),
    peopleReading('b1', 'empty', hour(5, 0), 0),
    peopleReading('b1', 'middle', hour(8, 0), 0),
    peopleReading('b1', 'middle', hour(8, 10), 1),
    peopleReading('b1', 'middle', hour(8, 20), 20),
    { type: 'zoneTransition', buildingId: 'b1', roomId: 'hall', fromRoomId: 'lab', timestamp: hour(6, 0), zoneTransition: 2 },
    temperatureReading('b1', 'cold', hour(7, 0), 1.5),
  ]);
  h.clock.now = at('2024-06-01T09:30:00Z');
  await job.runOnce();
  const rows = await buckets(h);
  const byRoom = Object.fromEntries(rows.map((r) => [r.room_id, r]));
  t.match(byRoom.solo, { count: 1, min: null, max: null, sum: null, avg: null, suppressed: true }, 'single occupancy is not kept');
  t.match(byRoom.small, { count: 3, min: null, max: null, sum: null, avg: null, suppressed: true });
  t.match(byRoom.mixed, { count: 3, min: 0, max: 10, sum: null, avg: null, suppressed: true }, 'an average of 3.3 is withheld, and the sum with it');
  t.match(byRoom.pair, { count: 2, min: null, max: 10, sum: null, avg: null, suppressed: true }, 'a withheld min cannot be worked back as sum − max');
  t.match(byRoom.busy, { count: 2, min: 6, max: 8, sum: 14, avg: 7, suppressed: false });
  t.match(byRoom.empty, { count: 1, min: 0, max: 0, sum: 0, avg: 0, suppressed: false }, 'a true 0 is kept');
  t.match(byRoom.middle, { count: 3, min: 0, max: 20, sum: null, avg: null, suppressed: true }, 'a reading of 1 between min and max cannot be worked back as sum − min − max');
  t.match(byRoom.hall, { metric: 'zoneTransition', max: null, suppressed: true }, 'every count metric obeys the floor');
  t.match(byRoom.cold, { metric: 'temperature', min: 1.5, suppressed: false }, 'a measurement is not a count');
  const raw = await h.pool.query(`SELECT value FROM readings WHERE room_id = 'solo'`);
  t.same(raw.rows, [{ value: 1 }], 'raw readings keep the true value');
});

t.test('+05:30: partitions and hours are UTC, whatever the database time zone', async (t) => {
  const h = await startHarness(t, { timeZone: 'Asia/Kolkata' });
  const job = retentionJob(h);
  const shown = await h.pool.query<{ tz: string }>("SELECT current_setting('TimeZone') AS tz");
  t.equal(shown.rows[0]?.tz, 'Asia/Kolkata', 'the service sessions run in +05:30');
  await ingestAt(h, at('2024-06-20T12:00:00+05:30'), [
    temperatureReading('b1', 'r1', at('2024-06-20T02:00:00+05:30'), 20), // 2024-06-19T20:30Z
    temperatureReading('b1', 'r1', at('2024-06-20T10:45:00+05:30'), 21), // 05:15Z
    temperatureReading('b1', 'r1', at('2024-06-20T11:10:00+05:30'), 23), // 05:40Z, another local hour, the same UTC hour
    temperatureReading('b1', 'r1', at('2024-06-20T11:35:00+05:30'), 25), // 06:05Z
  ]);
  t.same(await partitions(h), ['readings_p20240619', 'readings_p20240620'], 'local 02:00 on the 20th is the 19th in UTC');
  const bounds = await h.pool.query<{ bound: string }>(`SELECT pg_get_expr(c.relpartbound, c.oid) AS bound FROM pg_class c WHERE c.relname = 'readings_p20240620'`);
  t.match(bounds.rows[0]?.bound, /2024-06-20 05:30:00\+05:30.*2024-06-21 05:30:00\+05:30/, 'the partition spans the UTC day (shown in +05:30)');

  h.clock.now = at('2024-06-20T13:00:00+05:30');
  await job.runOnce();
  t.same((await buckets(h)).map((b) => [b.hour, b.count]), [['2024-06-19T20:00Z', 1], ['2024-06-20T05:00Z', 2], ['2024-06-20T06:00Z', 1]], 'buckets start on UTC hours, not on :30');

  h.clock.now = at('2024-07-04T05:30:00+05:30'); // 2024-07-04T00:00Z: the 19th ended 14 days before, the 20th not yet
  const report = await job.runOnce();
  t.same(report.dropped, ['readings_p20240619']);
  t.equal(await rawCount(h), 3);
  t.equal((await buckets(h)).length, 3, 'its hour remains');
});

t.test('DST: hours across a clock change are distinct UTC hours, and days are UTC days', async (t) => {
  const h = await startHarness(t, { timeZone: 'Europe/Berlin' });
  const job = retentionJob(h);
  // 2024-03-31: Berlin moves 02:00 CET to 03:00 CEST at 01:00Z.
  await ingestAt(h, at('2024-03-31T05:00:00Z'), [
    peopleReading('b1', 'r1', at('2024-03-30T23:30:00Z'), 7), // local 00:30 CET on the 31st, UTC day 30
    peopleReading('b1', 'r1', at('2024-03-31T00:30:00Z'), 7), // 01:30 CET
    peopleReading('b1', 'r1', at('2024-03-31T01:30:00Z'), 8), // 03:30 CEST: one local hour was skipped
    peopleReading('b1', 'r1', at('2024-03-31T02:30:00Z'), 9), // 04:30 CEST
  ]);
  // 2024-10-27: 03:00 CEST goes back to 02:00 CET at 01:00Z; local 02:30 happens twice.
  await ingestAt(h, at('2024-10-27T05:00:00Z'), [
    peopleReading('b2', 'r1', at('2024-10-27T00:30:00Z'), 6), // 02:30 CEST
    peopleReading('b2', 'r1', at('2024-10-27T01:30:00Z'), 6), // 02:30 CET
  ]);
  t.same(await partitions(h), ['readings_p20240330', 'readings_p20240331', 'readings_p20241027']);

  h.clock.now = at('2024-10-27T05:00:00Z');
  const report = await job.runOnce();
  t.same(report.dropped, ['readings_p20240330', 'readings_p20240331'], 'the spring days are past 14 days');
  t.same(
    (await buckets(h)).map((b) => [b.hour, b.count, b.max]),
    [
      ['2024-03-30T23:00Z', 1, 7],
      ['2024-03-31T00:00Z', 1, 7],
      ['2024-03-31T01:00Z', 1, 8],
      ['2024-03-31T02:00Z', 1, 9],
      ['2024-10-27T00:00Z', 1, 6],
      ['2024-10-27T01:00Z', 1, 6],
    ],
    'one bucket per UTC hour; the repeated local 02:30 is two hours',
  );
  t.equal(await rawCount(h), 2);
  t.equal(HOUR_MS, 3_600_000);
});

t.test('readings near the double-precision limit roll up without failing the job: the sum a double cannot hold is null', async (t) => {
  const h = await startHarness(t);
  const job = retentionJob(h, 5);
  await ingestAt(h, at('2024-06-01T09:30:00Z'), [
    temperatureReading('b1', 'furnace', at('2024-06-01T08:00:00Z'), 1.7e308),
    temperatureReading('b1', 'furnace', at('2024-06-01T08:10:00Z'), 1.7e308),
    temperatureReading('b1', 'swing', at('2024-06-01T08:00:00Z'), 1e300),
    temperatureReading('b1', 'swing', at('2024-06-01T08:10:00Z'), -1e300),
    temperatureReading('b1', 'office', at('2024-06-01T08:00:00Z'), 21.5),
  ]);
  h.clock.now = at('2024-06-01T09:30:00Z');
  const report = await job.runOnce();
  const byRoom = Object.fromEntries((await buckets(h)).map((r) => [r.room_id, r]));
  t.match(byRoom.furnace, { count: 2, min: 1.7e308, max: 1.7e308, sum: null, avg: 1.7e308, suppressed: false });
  t.match(byRoom.swing, { count: 2, min: -1e300, max: 1e300, sum: 0, avg: 0 });
  t.match(byRoom.office, { count: 1, sum: 21.5, avg: 21.5 }, 'the other buckets of the run are written');
  t.equal(report.watermark, at('2024-06-01T09:00:00Z'), 'the watermark moved past the hour');
});

t.test('the largest double and a tiny average roll up without failing the job', async (t) => {
  // PostgreSQL makes a double a numeric of 15 significant digits: the largest double averages past what
  // a double holds, and 5e-324 with two zeros averages below it; either cast back used to fail the run.
  const h = await startHarness(t);
  const job = retentionJob(h, 5);
  await ingestAt(h, at('2024-06-01T09:30:00Z'), [
    temperatureReading('b1', 'peak', at('2024-06-01T08:00:00Z'), Number.MAX_VALUE),
    temperatureReading('b1', 'tiny', at('2024-06-01T08:00:00Z'), 5e-324),
    temperatureReading('b1', 'tiny', at('2024-06-01T08:10:00Z'), 0),
    temperatureReading('b1', 'tiny', at('2024-06-01T08:20:00Z'), 0),
    temperatureReading('b1', 'office', at('2024-06-01T08:00:00Z'), 21.5),
  ]);
  h.clock.now = at('2024-06-01T09:30:00Z');
  const report = await job.runOnce();
  const byRoom = Object.fromEntries((await buckets(h)).map((r) => [r.room_id, r]));
  t.match(byRoom.peak, { count: 1, min: Number.MAX_VALUE, max: Number.MAX_VALUE, sum: null, avg: null }, 'a sum and an average past what a double holds are null');
  t.match(byRoom.tiny, { count: 3, min: 0, max: 5e-324, sum: 0, avg: 0 }, 'below what one holds, 0');
  t.match(byRoom.office, { count: 1, sum: 21.5, avg: 21.5 }, 'the other buckets of the run are written');
  t.equal(report.watermark, at('2024-06-01T09:00:00Z'), 'the watermark moved past the hour');
  t.equal(await rawCount(h), 5, 'nothing is dropped yet: the hour is not 14 days old');
});

t.test('a stop calls off a run under way: nothing of it is kept, and the next run does its work', async (t) => {
  const h = await startHarness(t);
  await ingestAt(h, at('2024-06-01T09:30:00Z'), [temperatureReading('b1', 'r1', at('2024-06-01T08:00:00Z'), 21)]);
  h.clock.now = at('2024-06-01T09:30:00Z');
  // Another session holds the rollup lock, so the job's run waits inside its transaction.
  const holder = await h.pool.connect();
  await holder.query('SELECT pg_advisory_lock($1)', [ROLLUP_LOCK]);
  let held = true;
  const release = async () => {
    if (!held) return;
    held = false;
    await holder.query('SELECT pg_advisory_unlock($1)', [ROLLUP_LOCK]);
    holder.release();
  };
  t.teardown(release);
  const job = new RetentionJob({ store: new PgRetentionStore(h.pool), clock: () => h.clock.now, privacyFloor: 5, intervalMs: 3_600_000, logger: silentLogger() });
  await job.start();
  await until(async () => {
    const { rows } = await h.pool.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'advisory'`);
    return rows.length > 0;
  }, 10_000, 'the run waiting for the rollup lock');

  // Without the call-off, the stop waits for the lock; the lock is let go after 20 s in any case.
  let fallback: NodeJS.Timeout | undefined;
  const first = await Promise.race([
    job.stop().then(() => 'the stop'),
    new Promise<string>((resolve) => (fallback = setTimeout(() => void release().then(() => resolve('the lock released')), 20_000))),
  ]);
  clearTimeout(fallback);
  t.equal(first, 'the stop', 'the stop ends while the lock is still held');
  const { rows: waiting } = await h.pool.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'advisory'`);
  t.equal(waiting.length, 0, 'no statement of the run is left waiting on the server');
  const { rows: state } = await h.pool.query<{ watermark: Date | null }>('SELECT watermark FROM rollup_state');
  t.equal(state[0]?.watermark ?? null, null, 'the watermark did not move');
  t.same(await buckets(h), [], 'nothing was rolled up');

  await release();
  const report = await retentionJob(h).runOnce();
  t.equal(report.watermark, at('2024-06-01T09:00:00Z'), 'the next run rolls the hour up');
  t.match(await buckets(h), [{ room_id: 'r1', hour: '2024-06-01T08:00Z', count: 1 }]);
});
