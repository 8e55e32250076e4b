import t, { type Test } from 'tap';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import Database from 'better-sqlite3';
import { createLogger } from '../../../shared/logger.js';
import { validateReading } from '../../../shared/catalog/validate.js';
import { EdgeDaemon, type DaemonConfig } from '../../../edge/src/daemon.js';
import { createEdgeMetrics } from '../../../edge/src/metrics.js';
import type { AccessPoint, ApPollResult, Poller } from '../../../edge/src/poll/types.js';
import { openLedger } from '../../../edge/src/report/ledger.js';
import { createBatchPoster } from '../../../edge/src/report/poster.js';
import { openSqliteZoneStore } from '../../../edge/src/zones/store.js';
import { DEFAULT_TRACKER_CONFIG } from '../../../edge/src/zones/types.js';
import { startVerifyingIngest } from '../report/verifying-ingest.js';
import { setupDaemon, testHasher, type DaemonOptions } from '../support/daemon.js';

const ap = (name: string, zone: string): AccessPoint => ({ name, zone, dialect: 'aruba-aos', target: { transport: 'snmp', host: '127.0.0.1', port: 161, version: '2c', community: 'x' } });
const APS = [ap('ap-lobby', 'lobby'), ap('ap-cafe', 'cafe')];
const config: DaemonConfig = {
  buildingId: 'hq',
  pollIntervalMs: 100,
  requestTimeoutMs: 80,
  zones: [{ id: 'lobby', devicesPerPerson: 2 }, { id: 'cafe' }],
  tracker: { ...DEFAULT_TRACKER_CONFIG, frozenPolls: 3, transitionWindowPolls: 5 },
  accessPoints: APS,
  reportNames: { 'ap-lobby': 'ap-lobby', 'ap-cafe': 'ap-cafe' },
};
const MACS = ['3c:22:fb:01:02:03', '3c:22:fb:01:02:04', '3c:22:fb:01:02:05'];

/** A poller port answering from a script, one entry per tick (plain data, no network). */
function scriptedPoller(script: Array<ApPollResult[] | Error>): Poller & { calls: number } {
  const poller = {
    calls: 0,
    async pollAll() {
      const next = script[Math.min(poller.calls, script.length - 1)]!;
      poller.calls++;
      if (next instanceof Error) throw next;
      return next;
    },
    async close() {},
  };
  return poller;
}

const ok = (name: string, zone: string, stations: Array<[string, number]>): ApPollResult => ({
  ap: name,
  zone,
  ok: true,
  durationMs: 5,
  stations: stations.map(([mac, rssiDbm]) => ({ mac, rssiDbm })),
});
const failed = (name: string, zone: string): ApPollResult => ({ ap: name, zone, ok: false, error: `timeout after 80 ms walking 1.3.6.1.4.1.14823.2.2.1.5.2.2.1.1.14.60.34.251.1.2.3 for ${MACS[0]}`, durationMs: 80, reason: 'timeout' });

function capture() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  return { lines, logger: createLogger('lintel-edge', { level: 'debug', destination: stream }) };
}

/** A daemon over `config` whose logs are kept in `lines`. */
function setup(t: Test, poller: Poller, extra: Omit<DaemonOptions, 'logger'> = {}) {
  const { lines, logger } = capture();
  return { ...setupDaemon(t, config, poller, { ...extra, logger }), lines };
}

t.test('a failed AP never stops the tick: its devices are frozen and the batch still goes out', async (t) => {
  const ingest = await startVerifyingIngest(t, { default: 'k' });
  const poster = createBatchPoster({ url: ingest.url, secret: 'k', timeoutMs: 10_000 });
  t.teardown(() => poster.close());
  const poller = scriptedPoller([
    [ok('ap-lobby', 'lobby', [[MACS[0]!, -50], [MACS[1]!, -55]]), ok('ap-cafe', 'cafe', [[MACS[2]!, -60]])],
    [failed('ap-lobby', 'lobby'), ok('ap-cafe', 'cafe', [[MACS[2]!, -60]])],
  ]);
  const { daemon, lines, metrics, reports } = setup(t, poller, { poster });
  const first = await daemon.tick();
  t.same(first.counts, { lobby: 2, cafe: 1 });
  t.equal(first.batch.delivery, 'accepted');
  const second = await daemon.tick();
  t.same(second.counts, { lobby: 2, cafe: 1 }, 'devices behind the silent AP are still counted');
  t.equal(second.frozen, 2);
  t.same(second.aps.map((a) => [a.ap, a.ok, a.reason ?? null]), [['ap-lobby', false, 'timeout'], ['ap-cafe', true, null]]);
  t.equal(second.batch.delivery, 'accepted');
  t.equal(reports.length, 2);

  const batch = JSON.parse(ingest.received[1]!.raw.toString()) as { readings: Array<Record<string, unknown>> };
  t.same(
    batch.readings.filter((r) => r.type === 'apClients').map((r) => r.roomId),
    ['ap-cafe'],
    'an AP that did not answer has no apClients reading (unknown is not 0)',
  );
  t.same(
    batch.readings.filter((r) => r.type === 'ratioDeviceCount').map((r) => [r.roomId, r.ratioDeviceCount]),
    [['lobby', 1]],
  );
  for (const r of batch.readings) t.ok(validateReading(r).ok);

  const warn = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === 'access point silent (it did not answer); its devices are frozen');
  t.ok(warn, 'the failure is logged');
  t.equal(warn?.ap, 'ap-lobby');
  const all = lines.join('\n');
  for (const mac of MACS) t.notOk(all.includes(mac), `no ${mac} in the logs`);
  t.notOk(/60\.34\.251\.1\.2\.3/.test(all), 'no MAC-carrying OID index in the logs');

  const text = await metrics.registry.metrics();
  t.match(text, /lintel_edge_ap_up\{ap="ap-lobby",service="lintel-edge"\} 0/);
  t.match(text, /lintel_edge_ap_polls_total\{ap="ap-lobby",outcome="timeout",service="lintel-edge"\} 1/);
  t.match(text, /lintel_edge_frozen_devices\{service="lintel-edge"\} 2/);
  t.match(text, /lintel_edge_batches_total\{delivery="accepted",service="lintel-edge"\} 2/);
  t.match(text, /lintel_edge_zone_devices\{zone="lobby",service="lintel-edge"\} 2/);
});

t.test('a poller that throws counts as every AP silent; the tick completes', async (t) => {
  const poller = scriptedPoller([[ok('ap-lobby', 'lobby', [[MACS[0]!, -50]]), ok('ap-cafe', 'cafe', [])], new Error('boom')]);
  const { daemon } = setup(t, poller);
  await daemon.tick();
  const report = await daemon.tick();
  t.same(report.counts, { lobby: 1, cafe: 0 });
  t.equal(report.frozen, 1);
  t.ok(report.aps.every((a) => !a.ok));
  t.equal(report.batch.delivery, 'kept', 'no ingest: kept in the ledger only');
});

t.test('an unreachable ingest is logged and dropped; the ledger still has the batch', async (t) => {
  const poster = createBatchPoster({ url: 'http://127.0.0.1:9/ingest', secret: 'k', timeoutMs: 500 });
  t.teardown(() => poster.close());
  const poller = scriptedPoller([[ok('ap-lobby', 'lobby', [[MACS[0]!, -50]]), ok('ap-cafe', 'cafe', [])]]);
  const { daemon, ledger, lines } = setup(t, poller, { poster });
  const report = await daemon.tick();
  t.equal(report.batch.delivery, 'unreachable');
  t.equal(report.batch.reason, 'ECONNREFUSED');
  const entries = [...ledger.entries()];
  t.equal(entries.length, 1);
  t.equal(entries[0]!.delivery, 'unreachable');
  t.ok(lines.some((l) => l.includes('ingest unreachable; batch dropped')));
});

t.test('a rejected batch is logged and dropped, never raised; the next tick posts its own batch, not a retry', async (t) => {
  const ingest = await startVerifyingIngest(t, { default: 'k' });
  const poster = createBatchPoster({ url: ingest.url, secret: 'k', timeoutMs: 10_000 });
  t.teardown(() => poster.close());
  const poller = scriptedPoller([[ok('ap-lobby', 'lobby', [[MACS[0]!, -50]]), ok('ap-cafe', 'cafe', [])]]);
  const { daemon, ledger, lines } = setup(t, poller, { poster });
  ingest.behave('fail-500');
  const rejected = await daemon.tick();
  t.equal(rejected.batch.delivery, 'rejected');
  t.equal(rejected.batch.reason, '500 internal error');
  const warn = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === 'ingest rejected the batch; dropped, the next tick supersedes it');
  t.match(warn, { level: 40, status: 500, reason: 'internal error', ledgerSeq: rejected.batch.seq });

  ingest.behave('verify');
  const next = await daemon.tick();
  t.equal(next.batch.delivery, 'accepted');
  t.equal(ingest.received.length, 2, 'one post per tick: the dropped batch is not sent again');
  const posted = ingest.received.map((r) => (JSON.parse(r.raw.toString()) as { batchId: string }).batchId);
  t.same(posted, [rejected.batch.batchId, next.batch.batchId]);
  t.same(
    [...ledger.entries()].map((e) => e.delivery),
    ['rejected', 'accepted'],
    'the ledger records both, with how each went',
  );
});

t.test('a batch that cannot be recorded in the ledger is not sent', async (t) => {
  const ingest = await startVerifyingIngest(t, { default: 'k' });
  const poster = createBatchPoster({ url: ingest.url, secret: 'k', timeoutMs: 10_000 });
  t.teardown(() => poster.close());
  const dir = t.testdir({});
  const ledger = openLedger(join(dir, 'ledger.sqlite'));
  ledger.close();
  const poller = scriptedPoller([[ok('ap-lobby', 'lobby', [[MACS[0]!, -50]]), ok('ap-cafe', 'cafe', [])]]);
  const { daemon } = setup(t, poller, { poster, ledger });
  const report = await daemon.tick();
  t.equal(report.batch.delivery, 'not_recorded');
  t.equal(ingest.received.length, 0);
});

t.test('state survives a restart of the daemon', async (t) => {
  const poller = scriptedPoller([[ok('ap-lobby', 'lobby', [[MACS[0]!, -50], [MACS[1]!, -50]]), ok('ap-cafe', 'cafe', [])]]);
  const first = setup(t, poller);
  await first.daemon.tick();
  first.zones.close();
  const zones = openSqliteZoneStore(join(first.dir, 'zones.sqlite'));
  t.teardown(() => zones.close());
  const silent = scriptedPoller([[failed('ap-lobby', 'lobby'), ok('ap-cafe', 'cafe', [])]]);
  const daemon = new EdgeDaemon({
    config,
    poller: silent,
    hasher: testHasher(),
    zones,
    ledger: first.ledger,
    metrics: createEdgeMetrics({ aps: [], zones: [] }, { defaults: false }),
    logger: capture().logger,
  });
  const report = await daemon.tick();
  t.equal(report.poll, 2, 'the poll count continues');
  t.same(report.counts, { lobby: 2, cafe: 0 }, 'devices from before the restart are still counted (frozen)');
});

t.test('an AP moved to another zone in the configuration takes its devices along at the restart, with no transition', async (t) => {
  const poller = scriptedPoller([[ok('ap-lobby', 'lobby', [[MACS[0]!, -50], [MACS[1]!, -55]]), ok('ap-cafe', 'cafe', [[MACS[2]!, -60]])]]);
  const first = setup(t, poller);
  await first.daemon.tick();
  first.zones.close();
  const zones = openSqliteZoneStore(join(first.dir, 'zones.sqlite'));
  t.teardown(() => zones.close());
  // The installer finds ap-lobby actually hangs in the cafe and fixes the configuration.
  const moved: DaemonConfig = { ...config, accessPoints: [ap('ap-lobby', 'cafe'), ap('ap-cafe', 'cafe')] };
  const { lines, logger } = capture();
  const daemon = new EdgeDaemon({
    config: moved,
    poller: scriptedPoller([[ok('ap-lobby', 'cafe', [[MACS[0]!, -50], [MACS[1]!, -55]]), ok('ap-cafe', 'cafe', [[MACS[2]!, -60]])]]),
    hasher: testHasher(),
    zones,
    ledger: first.ledger,
    metrics: createEdgeMetrics({ aps: [], zones: [] }, { defaults: false }),
    logger,
  });
  const reports = [await daemon.tick(), await daemon.tick(), await daemon.tick()];
  for (const report of reports) t.same(report.counts, { lobby: 0, cafe: 3 }, `poll ${report.poll}: all three count in the cafe from the first tick`);
  t.same(reports.flatMap((r) => r.transitions), [], 'nobody walked, so no transition is reported');
  t.ok(lines.some((l) => JSON.parse(l).msg === 'devices follow their AP to the zone the configuration gives it now' && JSON.parse(l).devices === 2), 'the re-zoning is logged with its count');
});

t.test('start() ticks on the interval until stop()', async (t) => {
  const poller = scriptedPoller([[ok('ap-lobby', 'lobby', [[MACS[0]!, -50]]), ok('ap-cafe', 'cafe', [])]]);
  const { daemon, reports } = setup(t, poller);
  await daemon.start();
  // no wall-clock deadline: the test's own timeout bounds the wait
  while (reports.length < 3) await new Promise((r) => setTimeout(r, 20));
  await daemon.stop();
  const after = poller.calls;
  t.ok(after === reports.length || after === reports.length + 1, `a poll per reported tick, and at most the one in flight at stop unreported (${after} polls, ${reports.length} reports)`);
  // A fence by the order of timers, not by speed: the daemon never schedules a tick more than one poll
  // interval ahead, so a tick still scheduled at stop would fire before a timer set now for two
  // intervals (Node runs timers in the order they expire), and it polls in its timer's callback.
  await new Promise((r) => setTimeout(r, 2 * config.pollIntervalMs));
  t.equal(poller.calls, after, 'no tick after stop');
});

t.test('a wall clock set back an hour does not hold the next tick back an hour', { timeout: 30_000 }, async (t) => {
  const poller = scriptedPoller([[ok('ap-lobby', 'lobby', [[MACS[0]!, -50]]), ok('ap-cafe', 'cafe', [])]]);
  let offset = 0;
  const { daemon, reports } = setupDaemon(t, config, poller, { clock: () => Date.now() + offset });
  await daemon.start();
  while (reports.length < 1) await new Promise((r) => setTimeout(r, 20));
  // NTP steps the clock back, as on a gateway that booted with its clock ahead
  offset = -3_600_000;
  // no wall-clock deadline: a stalled daemon fails by the test's timeout
  while (reports.length < 4) await new Promise((r) => setTimeout(r, 20));
  await daemon.stop();
  t.ok(reports[3]!.timestamp < reports[0]!.timestamp, 'the later ticks carry the corrected time');
});

t.test('stopping drops the poll the closing poller cut short, instead of counting every AP as silent', async (t) => {
  const answers = [ok('ap-lobby', 'lobby', [[MACS[0]!, -50]]), ok('ap-cafe', 'cafe', [[MACS[1]!, -50]])];
  // The real poller answers a poll in flight when it is closed with every AP failed; this one does the same.
  let cutShort: (() => void) | undefined;
  const poller = {
    calls: 0,
    async pollAll(): Promise<ApPollResult[]> {
      poller.calls++;
      if (poller.calls === 1) return answers;
      await new Promise<void>((resolve) => (cutShort = resolve));
      return APS.map((ap) => ({ ap: ap.name, zone: ap.zone, ok: false, error: 'poller closed', durationMs: 1, reason: 'error' }) as ApPollResult);
    },
    async close() {
      cutShort?.();
    },
  };
  const { daemon, zones, ledger, lines, reports } = setup(t, poller);
  await daemon.start();
  while (poller.calls < 2) await new Promise((r) => setTimeout(r, 10));
  // As `lintel-edge run` stops: the daemon is told first, then the poller closed.
  const stopping = daemon.stop();
  await poller.close();
  await stopping;
  t.equal(reports.length, 1, 'only the first tick was reported');
  t.equal(ledger.head().seq, 1, 'and only its batch recorded');
  const saved = zones.load();
  t.equal(saved.poll, 1, 'the saved state is the first poll');
  t.same([...saved.devices.values()].map((d) => d.frozenPolls), [0, 0], 'no device aged towards frozen');
  t.ok(lines.some((l) => l.includes('the poll in flight when stopping was dropped')));
  t.equal(daemon.stop(), daemon.stop(), 'a second stop shares the first');
});

t.test('a zone save that failed is caught up by the next one: a device gone meanwhile stays gone after a restart', async (t) => {
  const both = [ok('ap-lobby', 'lobby', [[MACS[0]!, -50], [MACS[1]!, -50]]), ok('ap-cafe', 'cafe', [])];
  const one = [ok('ap-lobby', 'lobby', [[MACS[0]!, -50]]), ok('ap-cafe', 'cafe', [])];
  const poller = scriptedPoller([both, one, one, one]);
  const { daemon, zones, ledger, dir, lines } = setup(t, poller);
  await daemon.tick();
  await daemon.tick();
  // another process (an operator's sqlite3 shell) holds the write lock through the tick that drops MACS[1]
  const other = new Database(join(dir, 'zones.sqlite'));
  t.teardown(() => other.close());
  other.exec('BEGIN IMMEDIATE');
  const dropped = await daemon.tick();
  t.same(dropped.counts, { lobby: 1, cafe: 0 });
  t.ok(lines.some((l) => l.includes('cannot save the zone state')), 'the failed save is logged');
  other.exec('ROLLBACK');
  await daemon.tick();

  zones.close();
  const reopened = openSqliteZoneStore(join(dir, 'zones.sqlite'));
  t.teardown(() => reopened.close());
  t.equal(reopened.load().devices.size, 1, 'the stored state holds the one device still there');
  const daemonAfterRestart = new EdgeDaemon({
    config,
    // the lobby AP reboots just after the restart: what the store holds is what is counted
    poller: scriptedPoller([[failed('ap-lobby', 'lobby'), ok('ap-cafe', 'cafe', [])]]),
    hasher: testHasher(),
    zones: reopened,
    ledger,
    metrics: createEdgeMetrics({ aps: [], zones: [] }, { defaults: false }),
    logger: capture().logger,
  });
  const report = await daemonAfterRestart.tick();
  t.same(report.counts, { lobby: 1, cafe: 0 }, 'the device that left before the restart is not counted again');
});

t.test('the ledger head gauge reads the ledger from the start, not 0 until the first batch', async (t) => {
  const ledger = openLedger(join(t.testdir({}), 'ledger.sqlite'));
  for (let i = 0; i < 3; i++) ledger.append(`{"batchId":"earlier-${i}"}`, Date.UTC(2026, 0, 1) + i);
  // A wall clock before 2024 records no batch, so only the start can have set it.
  const { daemon, metrics } = setup(t, scriptedPoller([]), { ledger, clock: () => 0 });
  await daemon.start();
  t.match(await metrics.registry.metrics(), /^lintel_edge_ledger_head_seq\{service="lintel-edge"\} 3$/m, 'the restarted gateway shows its ledger head');
});
