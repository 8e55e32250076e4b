/**
 * A running collector taking a reloaded configuration: never in the middle of a tick, and a new poll
 * interval moves the tick already waiting on the old one.
 */
import t from 'tap';
import type { DaemonConfig } from '../../../edge/src/daemon.js';
import type { AccessPoint, ApPollResult, Poller } from '../../../edge/src/poll/types.js';
import { DEFAULT_TRACKER_CONFIG } from '../../../edge/src/zones/types.js';
import { setupDaemon } from '../support/daemon.js';
import { until } from '../cli/building-config.js';

const ap = (name: string, zone: string): AccessPoint => ({ name, zone, dialect: 'aruba-aos', target: { transport: 'snmp', host: '127.0.0.1', port: 161, version: '2c', community: 'x' } });

function configOf(aps: AccessPoint[], pollIntervalMs: number): DaemonConfig {
  return {
    buildingId: 'hq',
    pollIntervalMs,
    requestTimeoutMs: 80,
    zones: [{ id: 'lobby' }, { id: 'cafe' }],
    tracker: DEFAULT_TRACKER_CONFIG,
    accessPoints: aps,
    reportNames: Object.fromEntries(aps.map((a) => [a.name, a.name])),
  };
}

/**
 * A poller port answering every AP it is asked for with no stations (plain data, no network), recording
 * each poll's APs; while `hold` is set, a poll waits until `release()`.
 */
function recordingPoller() {
  const polls: string[][] = [];
  let release: (() => void) | undefined;
  const poller: Poller & { polls: string[][]; hold: boolean; release(): void } = {
    polls,
    hold: false,
    async pollAll(aps) {
      polls.push(aps.map((a) => a.name));
      if (poller.hold) await new Promise<void>((resolve) => (release = resolve));
      return aps.map((a): ApPollResult => ({ ap: a.name, zone: a.zone, ok: true, stations: [], durationMs: 1 }));
    },
    release() {
      release?.();
    },
    async close() {},
  };
  return poller;
}

t.test('a reconfiguration waits for the tick in flight and applies from the next one', async (t) => {
  const poller = recordingPoller();
  poller.hold = true;
  const before = [ap('ap-lobby', 'lobby')];
  const { daemon, reports, metrics } = setupDaemon(t, configOf(before, 50), poller);
  await daemon.start();
  t.ok(await until(() => poller.polls.length === 1, 10_000), 'a poll is in flight');

  let applied = false;
  const reconfiguring = daemon.reconfigure({ config: configOf([ap('ap-cafe', 'cafe')], 50) }).then((r) => {
    applied = true;
    return r;
  });
  await new Promise((r) => setImmediate(r));
  t.equal(applied, false, 'not applied in the middle of the tick');
  poller.hold = false;
  poller.release();
  t.same(await reconfiguring, { applied: true, rezoned: 0 });
  t.same(reports[0]?.aps.map((a) => a.ap), ['ap-lobby'], 'the tick in flight ends on the configuration it began with');
  t.ok(await until(() => reports.length >= 2, 10_000), 'the next tick runs');
  t.same(poller.polls[1], ['ap-cafe'], 'the next poll is of the new APs');
  t.same(reports[1]?.aps.map((a) => a.ap), ['ap-cafe']);
  const text = await metrics.registry.metrics();
  t.notMatch(text, /ap="ap-lobby"/, 'the removed AP has no series');
  t.match(text, /lintel_edge_ap_up\{ap="ap-cafe",service="lintel-edge"\} 1/, 'the new one has');
});

t.test('a shorter poll interval moves the tick waiting on the old one', async (t) => {
  const poller = recordingPoller();
  const aps = [ap('ap-lobby', 'lobby')];
  const { daemon, reports } = setupDaemon(t, configOf(aps, 3_600_000), poller);
  await daemon.start();
  t.ok(await until(() => reports.length === 1, 10_000), 'the first tick, at start');
  await daemon.reconfigure({ config: configOf(aps, 50) });
  // on the old interval the next tick would be an hour away
  t.ok(await until(() => reports.length >= 3, 20_000), 'ticks follow on the new interval');
});
