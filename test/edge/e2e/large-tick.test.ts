/**
 * A tick of more readings than one ingest batch may hold (MAX_READINGS_PER_BATCH) goes as several
 * batches, each in the ledger and each accepted by the real telemetry ingest; nothing is refused 413.
 * The APs answer through a scripted poller port (plain data); SNMP and SSH polling are tested elsewhere.
 */
import t from 'tap';
import { MAX_READINGS_PER_BATCH } from '../../../shared/catalog/validate.js';
import { batchesOf } from '../../../edge/src/daemon.js';
import type { ApPollResult, Poller } from '../../../edge/src/poll/types.js';
import { createBatchPoster } from '../../../edge/src/report/poster.js';
import { SHARED_SECRET, countRows, startHarness } from '../../cloud/telemetry/support/harness.js';
import { setupDaemon } from '../support/daemon.js';
import { largeBuilding } from '../support/large-building.js';

t.test('batchesOf: one batch under the tick id when the readings fit, numbered slices when not', async (t) => {
  t.same(batchesOf('hq@t', [1, 2, 3], 3), [{ batchId: 'hq@t', readings: [1, 2, 3] }]);
  t.same(batchesOf('hq@t', [1, 2, 3, 4, 5, 6, 7], 3), [
    { batchId: 'hq@t#1/3', readings: [1, 2, 3] },
    { batchId: 'hq@t#2/3', readings: [4, 5, 6] },
    { batchId: 'hq@t#3/3', readings: [7] },
  ]);
  t.equal(batchesOf('hq@t', Array.from({ length: MAX_READINGS_PER_BATCH }, (_, i) => i)).length, 1, 'exactly the limit is one batch');
  t.equal(batchesOf('hq@t', Array.from({ length: MAX_READINGS_PER_BATCH + 1 }, (_, i) => i)).length, 2);
});

t.test('a tick of 7,800 readings goes as two batches, both stored by the real ingest', async (t) => {
  const h = await startHarness(t);
  const ZONES = 2600;
  // Every zone reports totalDeviceCount and ratioDeviceCount, every AP apClients: 3 readings a zone.
  const config = largeBuilding(ZONES);
  const answers: ApPollResult[] = config.accessPoints.map((ap, i) => ({
    ap: ap.name,
    zone: ap.zone,
    ok: true,
    durationMs: 1,
    stations: [{ mac: `3c:22:fb:${String((i >> 8) & 0xff).padStart(2, '0')}:${(i & 0xff).toString(16).padStart(2, '0')}:01`, rssiDbm: -50 }],
  }));
  const poller: Poller = { pollAll: async () => answers, close: async () => undefined };
  const poster = createBatchPoster({ url: `${h.url}/ingest`, secret: SHARED_SECRET, timeoutMs: 10_000 });
  t.teardown(() => poster.close());
  const { daemon, ledger } = setupDaemon(t, config, poller, { poster });

  const report = await daemon.tick();
  t.equal(report.batch.readings, 3 * ZONES);
  t.equal(report.batch.parts, 2, `${3 * ZONES} readings in batches of at most ${MAX_READINGS_PER_BATCH}`);
  t.equal(report.batch.delivery, 'accepted', 'both parts accepted');

  const { rows } = await h.pool.query<{ batch_id: string; accepted: number }>('SELECT batch_id, accepted FROM ingest_batches ORDER BY batch_id');
  t.same(rows, [
    { batch_id: `${report.batch.batchId}#1/2`, accepted: MAX_READINGS_PER_BATCH },
    { batch_id: `${report.batch.batchId}#2/2`, accepted: 3 * ZONES - MAX_READINGS_PER_BATCH },
  ]);
  t.equal(await countRows(h.pool, 'readings'), 3 * ZONES, 'every reading of the tick stored');
  const all = [...ledger.entries()];
  const entries = all.map((e) => JSON.parse(e.body) as { batchId: string; readings: unknown[] });
  t.same(entries.map((e) => [e.batchId, e.readings.length]), [
    [`${report.batch.batchId}#1/2`, MAX_READINGS_PER_BATCH],
    [`${report.batch.batchId}#2/2`, 3 * ZONES - MAX_READINGS_PER_BATCH],
  ], 'each part is its own ledger entry');
  t.equal(report.batch.seq, all.at(-1)!.seq, 'the report names the last entry');
});
