/**
 * A stop during a tick of several batches (more readings than one ingest batch holds) lets the post in
 * flight run out its timeout and sends no further part: each would add another timeout, past the stop's
 * deadline (`run` allows one post), and `run` would exit 1 mid-post, its entry marked interrupted.
 * The ingest is a loopback stand-in that never answers, as a silent telemetry service would not; the APs
 * answer through a scripted poller port (plain data).
 */
import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { MAX_READINGS_PER_BATCH } from '../../../shared/catalog/validate.js';
import type { ApPollResult, Poller } from '../../../edge/src/poll/types.js';
import { createBatchPoster } from '../../../edge/src/report/poster.js';
import { startVerifyingIngest } from '../report/verifying-ingest.js';
import { setupDaemon } from '../support/daemon.js';
import { largeBuilding } from '../support/large-building.js';

const SECRET = 'large-tick-stop-key';

t.test('a stop while the first part of a large tick is posted to a silent ingest sends no further part', async (t) => {
  const ingest = await startVerifyingIngest(t, { default: SECRET });
  ingest.behave('hang');
  // Every zone reports totalDeviceCount and ratioDeviceCount, every AP apClients: 3 readings a zone.
  const ZONES = 2000;
  const config = largeBuilding(ZONES);
  const answers: ApPollResult[] = config.accessPoints.map((ap) => ({ ap: ap.name, zone: ap.zone, ok: true, durationMs: 1, stations: [] }));
  const poller: Poller = { pollAll: async () => answers, close: async () => undefined };
  const poster = createBatchPoster({ url: ingest.url, secret: SECRET, timeoutMs: 2000 });
  t.teardown(() => poster.close());
  const { daemon, ledger, reports } = setupDaemon(t, config, poller, { poster });

  await daemon.start();
  // The first tick runs at once; its first part reaches the ingest, which holds it unanswered. The post's
  // timeout leaves the stop ample time to arrive while that part is in flight.
  while (ingest.received.length === 0) await sleep(10);
  await daemon.stop();

  t.equal(ingest.received.length, 1, 'only the part in flight was posted');
  const entries = [...ledger.entries()];
  const batchIds = entries.map((e) => (JSON.parse(e.body) as { batchId: string }).batchId);
  t.equal(batchIds.length, 1, `only the part in flight is in the ledger (${batchIds.join(', ')})`);
  t.match(batchIds[0], /#1\/2$/, 'the first of two parts');
  t.equal(entries[0]!.delivery, 'unreachable', 'its post ran out its timeout, and that is recorded');
  t.equal(reports.length, 1, 'the tick completed');
  t.match(reports[0]!.batch, { readings: 3 * ZONES, parts: 2, delivery: 'not_recorded', reason: 'the collector is stopping' });
  t.ok(3 * ZONES > MAX_READINGS_PER_BATCH, 'the tick needs two parts');
});
