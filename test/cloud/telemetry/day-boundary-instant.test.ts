/**
 * An instant a fraction of a microsecond before midnight UTC is stored as midnight, in the next day's
 * partition: that partition must be created too, or the batch cannot be stored.
 */
import t from 'tap';
import { DAY_MS, partitionNameOf } from '../../../cloud/telemetry/domain/utc.js';
import { postSigned, startHarness, temperatureReading } from './support/harness.js';

t.test('a reading that rounds up to the next UTC day is stored in that day', async (t) => {
  const h = await startHarness(t);
  const midnight = Math.floor(h.clock.now / DAY_MS) * DAY_MS + DAY_MS;
  const ts = midnight - 0.0002; // the double just below midnight, 0.24 µs before it
  const answer = await postSigned(h, { readings: [temperatureReading('b1', 'r1', ts, 20)] });
  t.equal(answer.status, 200, `accepted (${answer.text})`);
  const { rows } = await h.pool.query<{ ms: number; partition: string }>('SELECT (extract(epoch FROM ts) * 1000)::float8 AS ms, tableoid::regclass::text AS partition FROM readings');
  t.same(rows, [{ ms: midnight, partition: partitionNameOf(midnight) }], "stored at midnight, to the microsecond, in the next day's partition");
});
