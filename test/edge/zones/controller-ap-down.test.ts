/**
 * An AP behind a controller reboots: the controller answers, stops listing the AP's clients, and (in its
 * AP status table) no longer lists the AP or reports it not up. Through the real poller, real snmpd and
 * the collector's tick, the devices behind that AP are frozen, still counted, and settle again when the
 * AP is back.
 */
import t from 'tap';
import type { DaemonConfig } from '../../../edge/src/daemon.js';
import { loadDialects, type DialectCatalog } from '../../../edge/src/poll/dialects.js';
import { createPoller } from '../../../edge/src/poll/poller.js';
import type { Poller, SnmpTarget } from '../../../edge/src/poll/types.js';
import { DEFAULT_TRACKER_CONFIG } from '../../../edge/src/zones/types.js';
import { recording, startSnmpd, type RunningSnmpd } from '../../support/peers/snmpd.js';
import { setupDaemon } from '../support/daemon.js';
import { edgeRecording } from '../support/recordings.js';

const dialects = loadDialects();

/** The controller with every AP joined, and the same controller while AP-Lobby-1 reboots and AP-Lobby-2 downloads firmware. */
let allUp: RunningSnmpd;
let lobbyDown: RunningSnmpd;

t.before(async () => {
  [allUp, lobbyDown] = await Promise.all([
    startSnmpd({ community: 'lintel-ro', recordings: [recording('cisco-wlc.snmpwalk'), edgeRecording('cisco-wlc-aps.snmpwalk')] }),
    startSnmpd({ community: 'lintel-ro', recordings: [edgeRecording('cisco-wlc-ap-down.snmpwalk')] }),
  ]);
});
t.teardown(async () => {
  await Promise.all([allUp?.stop(), lobbyDown?.stop()]);
});

function configFor(dialect: string): DaemonConfig {
  return {
    buildingId: 'hq',
    pollIntervalMs: 1000,
    // a safety net only: snmpd on loopback answers in milliseconds
    requestTimeoutMs: 10_000,
    zones: [{ id: 'lobby' }, { id: 'cafe' }],
    tracker: DEFAULT_TRACKER_CONFIG,
    accessPoints: [
      {
        name: 'wlc-1',
        zone: 'lobby',
        dialect,
        target: { transport: 'snmp', host: '127.0.0.1', port: 1, version: '2c', community: 'lintel-ro' },
        apZones: { 'AP-Lobby-1': 'lobby', 'AP-Lobby-2': 'lobby', 'AP-Cafe-1': 'cafe' },
      },
    ],
    reportNames: {},
  };
}

/** The real poller, sent to whichever recorded controller plays the building's state now. */
function controllerIn(state: { now: () => RunningSnmpd }, catalog: DialectCatalog): Poller {
  const poller = createPoller({ dialects: catalog });
  return {
    pollAll: (aps, timeoutMs) => poller.pollAll(aps.map((ap) => ({ ...ap, target: { ...(ap.target as SnmpTarget), port: state.now().port } })), timeoutMs),
    close: () => poller.close(),
  };
}

t.test('devices behind an AP the controller reports down stay frozen and counted, and settle when it is back', async (t) => {
  let controller = allUp;
  const poller = controllerIn({ now: () => controller }, dialects);
  t.teardown(() => poller.close());
  const { daemon, metrics } = setupDaemon(t, configFor('cisco-wlc'), poller);

  const before = await daemon.tick();
  t.same(before.counts, { lobby: 2, cafe: 2 });
  t.equal(before.frozen, 0);

  // more ticks than absentPolls: an AP read as empty would have expired its devices by the last one
  controller = lobbyDown;
  const downTicks = DEFAULT_TRACKER_CONFIG.absentPolls + 2;
  for (let i = 1; i <= downTicks; i++) {
    const report = await daemon.tick();
    t.same(report.counts, { lobby: 2, cafe: 2 }, `down tick ${i}: the lobby devices are still counted`);
    t.equal(report.frozen, 2, `down tick ${i}: both lobby devices are frozen`);
    t.same(
      report.aps.map((ap) => [ap.ap, ap.ok, ap.reason ?? null]),
      [
        ['AP-Lobby-1', false, 'ap_down'],
        ['AP-Lobby-2', false, 'ap_down'],
        ['AP-Cafe-1', true, null],
      ],
      `down tick ${i}: the down APs fail, their neighbour answers`,
    );
  }

  controller = allUp;
  const after = await daemon.tick();
  t.same(after.counts, { lobby: 2, cafe: 2 });
  t.equal(after.frozen, 0, 'heard again: nobody is frozen');
  t.ok(
    after.aps.every((ap) => ap.ok),
    'every AP behind the controller answers again',
  );
  t.same(after.transitions, [], 'nobody moved zone on the way');

  const text = await metrics.registry.metrics();
  t.match(text, new RegExp(`lintel_edge_ap_polls_total\\{ap="AP-Lobby-1",outcome="ap_down",service="lintel-edge"\\} ${downTicks}`));
  t.match(text, /lintel_edge_ap_up\{ap="AP-Lobby-1",service="lintel-edge"\} 1/);
});

t.test('a poller that breaks its contract and rejects: every AP behind the controller counts as silent, its devices frozen', async (t) => {
  const real = controllerIn({ now: () => allUp }, dialects);
  t.teardown(() => real.close());
  let broken = false;
  const poller: Poller = {
    pollAll: (aps, timeoutMs) => (broken ? Promise.reject(new Error('poller bug')) : real.pollAll(aps, timeoutMs)),
    close: async () => {},
  };
  const { daemon } = setupDaemon(t, configFor('cisco-wlc'), poller);
  t.same((await daemon.tick()).counts, { lobby: 2, cafe: 2 });
  broken = true;
  for (let i = 1; i <= DEFAULT_TRACKER_CONFIG.absentPolls + 2; i++) {
    const report = await daemon.tick();
    t.same(report.counts, { lobby: 2, cafe: 2 }, `failed tick ${i}: nobody is taken for gone`);
    t.equal(report.frozen, 4, `failed tick ${i}: every device is frozen`);
    t.same(report.aps.map((ap) => [ap.ap, ap.ok]), [['AP-Lobby-1', false], ['AP-Lobby-2', false], ['AP-Cafe-1', false]], 'each AP behind the controller, by its name');
  }
});

t.test('without an AP status table the same reboot reads as an empty AP and its device expires', async (t) => {
  const cisco = dialects.get('cisco-wlc');
  if (cisco?.transport !== 'snmp') throw new Error('cisco-wlc is an SNMP dialect');
  const { apStatus: _apStatus, ...withoutStatus } = cisco;
  const catalog: DialectCatalog = new Map([['cisco-wlc-no-status', { ...withoutStatus, name: 'cisco-wlc-no-status' }]]);
  let controller = allUp;
  const poller = controllerIn({ now: () => controller }, catalog);
  t.teardown(() => poller.close());
  const { daemon } = setupDaemon(t, configFor('cisco-wlc-no-status'), poller);

  t.same((await daemon.tick()).counts, { lobby: 2, cafe: 2 });
  controller = lobbyDown;
  let last = await daemon.tick();
  for (let i = 1; i < DEFAULT_TRACKER_CONFIG.absentPolls; i++) last = await daemon.tick();
  t.same(last.counts, { lobby: 1, cafe: 2 }, "AP-Lobby-1's device is gone: only AP-Lobby-2's leftover row keeps one");
  t.equal(last.frozen, 0);
});
