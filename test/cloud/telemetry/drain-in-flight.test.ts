/**
 * Shutdown waits for the batches still being stored, not only for the publications already started:
 * the service drains ingest before it quits Redis, so a batch that commits during shutdown (say, one
 * that waited for the retention job's lock) is published like any other, not stored and left unseen.
 */
import t from 'tap';
import { ROLLUP_LOCK } from '../../../cloud/telemetry/store/locks.js';
import { SHARED_KEY, countRows, peopleReading, startHarness, subscribe, until } from './support/harness.js';

t.test('drain waits for a batch still being stored, then for its publication', async (t) => {
  const h = await startHarness(t);
  const messages = await subscribe(t, h.redisUrl, [h.channels.raw]);
  // The retention job holds the rollup lock: ingest waits for it.
  const retention = await h.pool.connect();
  t.teardown(() => retention.release());
  await retention.query('SELECT pg_advisory_lock($1)', [ROLLUP_LOCK]);
  let stored = false;
  const batch = h.ingest.ingest(SHARED_KEY, { readings: [peopleReading('b1', 'r1', h.clock.now, 3)] }).then((answer) => {
    stored = true;
    return answer;
  });
  await until(async () => (await h.pool.query(`SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`)).rows.length > 0, 10_000, 'the batch to wait for the lock');

  const drained = h.ingest.drain().then(() => stored);
  await retention.query('SELECT pg_advisory_unlock($1)', [ROLLUP_LOCK]);
  t.same(await batch, { accepted: 1 });
  t.ok(await drained, 'drain resolved only once the batch was stored');
  await until(() => messages.length === 1, 5000, 'the publication');
  t.equal(await countRows(h.pool, 'readings'), 1);
});
