/**
 * Only the ingest's own answer, a 2xx `{"accepted": n}`, delivers a batch. Any 2xx was counted as
 * `accepted`: a captive portal's page, another server answering 200 at a wrong URL, or a proxy's empty
 * 204 had the ledger mark the batch delivered and settled the zone pairs' zeros (PairsAtIngest), which the
 * cloud then never got. Through the poster, and through the collector's tick with the real SQLite zone
 * store and ledger, against a loopback stand-in that answers as scripted and fails on any other call.
 */
import t, { type Test } from 'tap';
import { createBatchPoster, type BatchPoster } from '../../../edge/src/report/poster.js';
import { capturedLogger } from '../../support/captured-logger.js';
import { setupDaemon } from '../support/daemon.js';
import { startScriptedIngest, type IngestAnswer } from './scripted-ingest.js';
import { LOBBY_CAFE_CONFIG as config, pairsOf, transitionsInBody, visitorPoller } from '../support/lobby-cafe-visitor.js';

const SECRET = 'ingest-secret';
const MAC = '3c:22:fb:01:02:03';
const PORTAL_PAGE = `<!DOCTYPE html><html><head><title>Guest Wi-Fi</title></head><body>Device ${MAC}: accept the terms to go online</body></html>`;

/** The ingest's own answer to a signed batch, as the telemetry service writes it: `{"accepted": <readings>}`. */
const INGEST = (raw: Buffer): IngestAnswer => {
  const { readings } = JSON.parse(raw.toString('utf8')) as { readings: unknown[] };
  return { status: 200, body: JSON.stringify({ accepted: readings.length }), type: 'application/json; charset=utf-8' };
};
const PORTAL: IngestAnswer = { status: 200, body: PORTAL_PAGE, type: 'text/html' };

function posterTo(t: Test, url: string): BatchPoster {
  const poster = createBatchPoster({ url, secret: SECRET, timeoutMs: 10_000 });
  t.teardown(() => poster.close());
  return poster;
}

const batch = JSON.stringify({
  batchId: 'hq@2026-11-22T19:04:14.000Z',
  readings: [1, 2, 3].map((n) => ({ type: 'totalDeviceCount', buildingId: 'hq', roomId: `room-${n}`, timestamp: 1795374254000, totalDeviceCount: n })),
});

t.test('a 200 with an HTML page is not delivered, and the reason says the answer was not the ingest’s', async (t) => {
  const ingest = await startScriptedIngest(t, [PORTAL], { secret: SECRET });
  const outcome = await posterTo(t, ingest.url).post(batch);
  t.match(outcome, { outcome: 'rejected', status: 200 });
  const reason = outcome.outcome === 'rejected' ? outcome.reason : '';
  t.match(reason, /^not the ingest's \{"accepted": n\} answer, so not delivered: <!DOCTYPE html><html><head><title>Guest Wi-Fi/, 'names what came instead');
  t.notMatch(reason, MAC, 'without the MAC the page quoted');
  t.ok(reason.length <= 300, 'cut as other reasons');
});

t.test('a 200 {"accepted": 3} is delivered as before', async (t) => {
  const ingest = await startScriptedIngest(t, [INGEST], { secret: SECRET });
  t.same(await posterTo(t, ingest.url).post(batch), { outcome: 'accepted', status: 200 });
});

t.test('a 204 with no body is not delivered', async (t) => {
  const ingest = await startScriptedIngest(t, [{ status: 204, body: '' }], { secret: SECRET });
  t.same(await posterTo(t, ingest.url).post(batch), { outcome: 'rejected', status: 204, reason: `not the ingest's {"accepted": n} answer, so not delivered: an empty body` });
});

t.test('a 2xx JSON without a count of readings is not delivered', async (t) => {
  const bodies = ['{"ok":true}', '{"accepted":"3"}', '{"accepted":-1}', '{"accepted":1.5}', '{"accepted":true}', 'null', '[3]'];
  const ingest = await startScriptedIngest(t, bodies.map((body) => ({ status: 200, body, type: 'application/json' })), { secret: SECRET });
  const poster = posterTo(t, ingest.url);
  for (const body of bodies) t.match(await poster.post(batch), { outcome: 'rejected', status: 200, reason: `not the ingest's {"accepted": n} answer, so not delivered: ${body}` }, body);
});

t.test('a long page answered 200 is cut in the reason as other reasons are', async (t) => {
  const ingest = await startScriptedIngest(t, [{ status: 200, body: `<html>${'x'.repeat(2 * 1024 * 1024)}</html>`, type: 'text/html' }], { secret: SECRET });
  const outcome = await posterTo(t, ingest.url).post(batch);
  t.match(outcome, { outcome: 'rejected', status: 200 });
  t.ok(outcome.outcome === 'rejected' && outcome.reason.endsWith('…') && outcome.reason.length < 300);
});

// The collector's tick: a visitor moves lobby → cafe at tick 2; with a window of 2 polls the move is
// counted at ticks 2 and 3, and reported with 0 at tick 4 (test/edge/support/lobby-cafe-visitor.ts).
const transitionsIn = (body: string | undefined): string[] => transitionsInBody(body ?? '{"readings":[]}');

t.test('a tick whose batch got a captive portal’s page records it undelivered, and its zone pair’s 0 is sent again', async (t) => {
  const ingest = await startScriptedIngest(t, [INGEST, INGEST, INGEST, PORTAL, INGEST, INGEST], { secret: SECRET });
  const { logger, lines } = capturedLogger('edge-test');
  const { daemon, ledger } = setupDaemon(t, config, visitorPoller(), { poster: posterTo(t, ingest.url), logger });
  for (let tick = 1; tick < 4; tick++) await daemon.tick();
  t.same(transitionsIn(ingest.received.at(-1)), ['lobby>cafe:1'], 'the ingest holds the move');

  const fell = await daemon.tick();
  t.same(pairsOf(fell), ['lobby>cafe:0'], 'the pair falls to 0');
  t.same(transitionsIn(ingest.received.at(-1)), ['lobby>cafe:0'], 'the portal got the batch with the 0');
  t.equal(fell.batch.delivery, 'rejected', 'not delivered');
  t.match(fell.batch.reason, /^200 not the ingest's \{"accepted": n\} answer, so not delivered: <!DOCTYPE html>/);
  t.equal([...ledger.entries()].find((e) => e.seq === fell.batch.seq)?.delivery, 'rejected', 'the ledger records it undelivered');
  const logged = lines.find((l) => l.msg === 'ingest rejected the batch; dropped, the next tick supersedes it');
  t.match(logged, { status: 200, reason: /^not the ingest's/, ledgerSeq: fell.batch.seq }, 'logged as other refusals are');
  t.notMatch(JSON.stringify(lines), MAC, 'no MAC of the page in the log');

  const next = await daemon.tick();
  t.equal(next.batch.delivery, 'accepted');
  t.same(transitionsIn(ingest.received.at(-1)), ['lobby>cafe:0'], 'the 0 is still owed, and the next batch carries it');
  t.same(pairsOf(await daemon.tick()), [], 'once the ingest took it, the pair is settled');
});
