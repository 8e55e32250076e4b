/**
 * A header Node will not send (a key id holding a control character) is an outcome of the post, as its
 * contract says of every failure, never an exception: it was thrown inside the post's promise, which
 * rejected, so the collector's tick rejected too and left its ledger entry without a delivery (marked
 * interrupted at the next open, though nothing had left).
 */
import t from 'tap';
import { createBatchPoster } from '../../../edge/src/report/poster.js';
import { oneApLobby, setupDaemon } from '../support/daemon.js';
import { startVerifyingIngest } from './verifying-ingest.js';

const SECRET = 'invalid-header-key';
const BAD_KEY_ID = 'gw-1\nX-Injected: yes';

const body = JSON.stringify({
  batchId: 'hq@2026-11-22T19:04:14.000Z',
  readings: [{ type: 'totalDeviceCount', buildingId: 'hq', roomId: 'lobby', timestamp: 1795374254000, totalDeviceCount: 3 }],
});

t.test('a key id Node refuses as a header makes the post unreachable, and nothing is sent', async (t) => {
  const ingest = await startVerifyingIngest(t, { default: SECRET });
  const poster = createBatchPoster({ url: ingest.url, secret: SECRET, keyId: BAD_KEY_ID, timeoutMs: 10_000 });
  t.teardown(() => poster.close());
  t.same(await poster.post(body), { outcome: 'unreachable', reason: 'ERR_INVALID_CHAR' });
  t.same(ingest.received, [], 'no request reached the ingest');
});

t.test('a tick whose post cannot be made completes, and its ledger entry records the outcome', async (t) => {
  const ingest = await startVerifyingIngest(t, { default: SECRET });
  const { config, poller } = oneApLobby('3c:22:fb:01:02:03');
  const poster = createBatchPoster({ url: ingest.url, secret: SECRET, keyId: BAD_KEY_ID, timeoutMs: 10_000 });
  t.teardown(() => poster.close());
  const { daemon, ledger } = setupDaemon(t, config, poller, { poster });

  const report = await daemon.tick();
  t.match(report.batch, { delivery: 'unreachable', reason: 'ERR_INVALID_CHAR', seq: 1 });
  t.same([...ledger.entries()].map((e) => e.delivery), ['unreachable'], 'recorded, so the next open has nothing to mark interrupted');
  t.same(ingest.received, [], 'nothing left');
});
