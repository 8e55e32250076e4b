/**
 * A zone pair whose moves leave the transition window is reported once with 0. That one 0 was in one
 * tick's batch only: when that batch was lost (ingest refusing or unreachable, the wall clock not set),
 * no later tick named the pair, and the last value the ingest stored and published for it stayed its old
 * count for good. Now the pair is reported with 0 until a batch carrying it is delivered, also across
 * a restart. Through the collector's tick, the real SQLite zone store and ledger, and the verifying
 * ingest stand-in over HTTP.
 */
import t, { type Test } from 'tap';
import { join } from 'node:path';
import { createBatchPoster, type BatchPoster } from '../../../edge/src/report/poster.js';
import { freeTcpPort } from '../../support/peers/ports.js';
import { startVerifyingIngest, type ReceivedBatch } from '../report/verifying-ingest.js';
import { collectorOn } from '../support/collector-on-file.js';
import { setupDaemon } from '../support/daemon.js';
import { LOBBY_CAFE_CONFIG as config, LOBBY_CAFE_FALL_TICK as FALL_TICK, pairsOf, transitionsInBody, visitorPoller } from '../support/lobby-cafe-visitor.js';

const SECRET = 'ingest-secret';
const transitionsReceived = (batch: ReceivedBatch | undefined) => (batch ? transitionsInBody(batch.raw.toString('utf8')) : undefined);

function posterTo(t: Test, url: string): BatchPoster {
  const poster = createBatchPoster({ url, secret: SECRET, timeoutMs: 10_000 });
  t.teardown(() => poster.close());
  return poster;
}

t.test('a pair whose 0 the ingest refused is reported with 0 again until a batch carrying it is accepted', async (t) => {
  const ingest = await startVerifyingIngest(t, { default: SECRET });
  const { daemon } = setupDaemon(t, config, visitorPoller(), { poster: posterTo(t, ingest.url) });
  for (let i = 1; i < FALL_TICK; i++) await daemon.tick();
  t.same(transitionsReceived(ingest.received.at(-1)), ['lobby>cafe:1'], 'the ingest holds the move');

  ingest.behave('fail-500');
  const fell = await daemon.tick();
  t.same(pairsOf(fell), ['lobby>cafe:0'], 'the pair falls to 0');
  t.equal(fell.batch.delivery, 'rejected', 'and that batch is refused');

  ingest.behave('verify');
  const next = await daemon.tick();
  t.equal(next.batch.delivery, 'accepted');
  t.same(transitionsReceived(ingest.received.at(-1)), ['lobby>cafe:0'], 'the next accepted batch carries the 0');
  const after = await daemon.tick();
  t.same(pairsOf(after), [], 'once delivered, the pair is no longer reported');
  t.same(transitionsReceived(ingest.received.at(-1)), []);
});

t.test('a pair whose 0 was lost to an unreachable ingest is reported with 0 by the first tick after a restart', async (t) => {
  const ingest = await startVerifyingIngest(t, { default: SECRET });
  const path = join(t.testdir({}), 'zones.sqlite');
  const poller = visitorPoller();
  const evening = collectorOn(t, path, config, poller, { poster: posterTo(t, ingest.url) });
  for (let i = 1; i < FALL_TICK; i++) await evening.daemon.tick();
  t.same(transitionsReceived(ingest.received.at(-1)), ['lobby>cafe:1'], 'the ingest holds the move');

  // the network goes down: a port nobody listens on
  await evening.daemon.reconfigure({ config, poster: posterTo(t, `http://127.0.0.1:${await freeTcpPort()}/ingest`) });
  const fell = await evening.daemon.tick();
  t.same(pairsOf(fell), ['lobby>cafe:0']);
  t.equal(fell.batch.delivery, 'unreachable', 'the batch with the 0 is lost');
  await evening.stop();

  // power comes back, and the network with it
  const received = ingest.received.length;
  const morning = collectorOn(t, path, config, poller, { poster: posterTo(t, ingest.url) });
  const first = await morning.daemon.tick();
  t.equal(first.batch.delivery, 'accepted');
  t.equal(ingest.received.length, received + 1);
  t.same(transitionsReceived(ingest.received.at(-1)), ['lobby>cafe:0'], 'the first batch after the restart carries the 0');
  t.same(pairsOf(await morning.daemon.tick()), [], 'then no more');
});

t.test('without an ingest, a 0 not recorded while the wall clock was unset goes into the next ledger entry', async (t) => {
  let clockSet = true;
  const { daemon, ledger } = setupDaemon(t, config, visitorPoller(), { clock: () => (clockSet ? Date.now() : 0) });
  for (let i = 1; i < FALL_TICK; i++) await daemon.tick();
  clockSet = false;
  const fell = await daemon.tick();
  t.same(pairsOf(fell), ['lobby>cafe:0']);
  t.equal(fell.batch.delivery, 'not_recorded');
  clockSet = true;
  const next = await daemon.tick();
  t.equal(next.batch.delivery, 'kept');
  const bodies = [...ledger.entries()].map((e) => e.body);
  t.same(transitionsInBody(bodies.at(-1)!), ['lobby>cafe:0'], 'the next entry carries the 0');
  t.same(pairsOf(await daemon.tick()), [], 'then no more');
});

t.test('a 0 delivered at once is sent once, not at every tick after', async (t) => {
  const ingest = await startVerifyingIngest(t, { default: SECRET });
  const { daemon } = setupDaemon(t, config, visitorPoller(), { poster: posterTo(t, ingest.url) });
  for (let i = 0; i < FALL_TICK + 3; i++) await daemon.tick();
  t.same(
    ingest.received.map(transitionsReceived),
    [[], ['lobby>cafe:1'], ['lobby>cafe:1'], ['lobby>cafe:0'], [], [], []],
    'each tick as the window counts it: the move twice, the 0 once',
  );
  t.ok(ingest.received.every((b) => b.status === 200));
});
