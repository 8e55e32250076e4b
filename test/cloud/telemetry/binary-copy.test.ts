/**
 * Readings go into PostgreSQL by binary COPY (store/copy-binary.ts). What is stored must be what the
 * text COPY they replaced stored: the same ids, the instant to the same microsecond (the rounding of
 * a fraction of a millisecond, a carry into the next millisecond or day), the same value (-0 as 0)
 * and the same payload, for ASCII and non-ASCII text alike.
 */
import t from 'tap';
import type { ReadingRow } from '../../../cloud/telemetry/domain/batch.js';
import { copyFrom, copyText } from '../../../cloud/telemetry/store/copy-in.js';
import { PgReadingsStore } from '../../../cloud/telemetry/store/readings.js';
import { migratedPool } from './support/database.js';

const DAY = 86_400_000;
const now = Math.floor(Date.now() / DAY) * DAY - DAY / 2;
const midnight = Math.floor(now / DAY) * DAY + DAY;

/** The instant as the text COPY wrote it: ISO text to the nearest microsecond. */
function isoMicros(ms: number): string {
  let whole = Math.floor(ms);
  let micros = Math.round((ms - whole) * 1000);
  if (micros === 1000) {
    whole += 1;
    micros = 0;
  }
  return `${new Date(whole).toISOString().slice(0, -1)}${String(micros).padStart(3, '0')}Z`;
}

const row = (roomId: string, ts: number, value: number, payload = '{}', extra: Partial<ReadingRow> = {}): ReadingRow => ({
  buildingId: 'b1',
  roomId,
  metric: 'temperature',
  ts,
  value,
  payload,
  fromRoomId: '',
  ...extra,
});

const rows: ReadingRow[] = [
  row('r1', now, 21.5, '{"humidity":40,"sensorId":"stat-1"}'),
  row('r1', now + 0.0014, -0),
  row('r1', now + 0.0026, 1e-7),
  row('r1', now + 1.9996, 1.7976931348623157e308),
  row('r1', now + 2.5, 5e-324),
  row('r2', midnight - 0.0016, 0.1 + 0.2),
  row('r2', midnight - 0.0001, -273.15),
  row('salle-é', now, 20, '{"sensorId":"capteur «1»"}'),
  row('🏠 room', now, 20, '{"sensorId":"a\\"b\\\\c\\td"}', { buildingId: 'bâtiment' }),
  row('lobby', now, 3, '{"fromRoomId":"atrium"}', { metric: 'zoneTransition', fromRoomId: 'atrium' }),
];

t.test('binary COPY stores what the text COPY stored', async (t) => {
  const pool = await migratedPool(t);
  await pool.query('CREATE TABLE expected (building_id text, room_id text, metric text, ts timestamptz, value float8, payload jsonb)');
  const text = rows.map((r) => `${copyText(r.buildingId)}\t${copyText(r.roomId)}\t${copyText(r.metric)}\t${isoMicros(r.ts)}\t${r.value}\t${copyText(r.payload)}\n`).join('');
  const client = await pool.connect();
  try {
    t.equal(await copyFrom(client, 'COPY expected FROM STDIN', [Buffer.from(text)]), rows.length);
  } finally {
    client.release();
  }
  const store = new PgReadingsStore(pool);
  const outcome = await store.store({ keyId: '', batchId: 'binary', rows, boundedMetrics: [], alertsFor: () => [] });
  t.match(outcome, { kind: 'stored', inserted: rows.length });
  const columns = "building_id, room_id, metric, to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') AS ts, value::text, payload::text";
  const order = 'ORDER BY building_id, room_id, metric, ts';
  const stored = await pool.query(`SELECT ${columns}, from_room_id, tableoid::regclass::text AS partition FROM readings ${order}`);
  const expected = await pool.query(`SELECT ${columns} FROM expected ${order}`);
  t.same(
    stored.rows.map(({ from_room_id: _origin, partition: _partition, ...r }) => r),
    expected.rows,
  );
  t.same(
    stored.rows.filter((r) => r.from_room_id !== '').map((r) => r.from_room_id),
    ['atrium'],
  );
  const nextDay = stored.rows.find((r) => r.room_id === 'r2' && r.value === '-273.15');
  t.match(nextDay, { ts: /00:00:00\.000000$/ }, 'a tenth of a microsecond before midnight is stored at midnight');
  t.not(nextDay?.partition, stored.rows.find((r) => r.room_id === 'r2' && r.value !== '-273.15')?.partition, 'in the next day\'s partition');
  t.match(stored.rows.find((r) => r.room_id === 'r1' && r.ts.endsWith('.000001')), { value: '0' }, '-0 is stored as 0, at the nearest microsecond');
  t.match(stored.rows.find((r) => r.room_id === 'r1' && r.value === '1e-07'), { ts: /\.000003$/ });
  t.match(stored.rows.find((r) => r.room_id === 'r1' && r.value === '1.7976931348623157e+308'), { ts: /\.002000$/ }, 'a microsecond carried into the next millisecond');
});
