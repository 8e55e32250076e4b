/**
 * An AP that leaves the configuration (renamed, or removed with its zone) by a reload or before a
 * restart. Its devices were once left known by that AP in their old zone; when another AP heard them at
 * the next polls (the same physical AP under its new name in another zone, or the AP of a zone that
 * stays), their zone did not hear them and their AP was not silent, so the dwell rule counted: after
 * `switchPolls` ticks they moved, and `lobby→cafe` was reported for the whole transition window, a move
 * nobody made. When another AP of their old zone still heard them faintly, the margin (or the dwell
 * rule) moved them all the same. Now they arrive where they are heard at the first tick, with no move.
 * Through the collector's tick, the real SQLite zone store, and (for the rename) the real poller and
 * snmpd.
 */
import t from 'tap';
import { join } from 'node:path';
import type { DaemonConfig, EdgeDaemon, TickReport } from '../../../edge/src/daemon.js';
import { loadDialects } from '../../../edge/src/poll/dialects.js';
import { createPoller } from '../../../edge/src/poll/poller.js';
import type { AccessPoint, ApPollResult, Poller } from '../../../edge/src/poll/types.js';
import { DEFAULT_TRACKER_CONFIG, type TrackerConfig } from '../../../edge/src/zones/types.js';
import { recording, startSnmpd } from '../../support/peers/snmpd.js';
import { collectorOn } from '../support/collector-on-file.js';
import { setupDaemon } from '../support/daemon.js';

const tracker: TrackerConfig = { ...DEFAULT_TRACKER_CONFIG, switchPolls: 3, transitionWindowPolls: 4 };
/** Enough ticks for the dwell rule to have moved them and the window to have reported it. */
const TICKS_AFTER = tracker.switchPolls + tracker.transitionWindowPolls + 1;

const ap = (name: string, zone: string, port = 161): AccessPoint => ({ name, zone, dialect: 'aruba-aos', target: { transport: 'snmp', host: '127.0.0.1', port, version: '2c', community: 'lintel-ro' } });

function configOf(zones: string[], aps: AccessPoint[]): DaemonConfig {
  return {
    buildingId: 'hq',
    pollIntervalMs: 10_000,
    // a safety net only: snmpd on loopback answers in milliseconds
    requestTimeoutMs: 10_000,
    zones: zones.map((id) => ({ id })),
    tracker,
    accessPoints: aps,
    reportNames: {},
  };
}

/**
 * The poller port for a building whose radios hear each device as `hears` says, by AP name: every AP
 * it is asked for answers (plain data, no network).
 */
function buildingPoller(hears: (ap: string) => Array<[string, number]>): Poller {
  return {
    async pollAll(aps) {
      return aps.map((a): ApPollResult => ({ ap: a.name, zone: a.zone, ok: true, durationMs: 1, stations: hears(a.name).map(([mac, rssiDbm]) => ({ mac, rssiDbm })) }));
    },
    async close() {},
  };
}

async function ticks(daemon: EdgeDaemon, n: number): Promise<TickReport[]> {
  const reports: TickReport[] = [];
  for (let i = 0; i < n; i++) reports.push(await daemon.tick());
  return reports;
}

/** Every zoneTransition a run of ticks reported, as `from>to:count`. */
const transitionsOf = (reports: TickReport[]) => reports.flatMap((r) => r.transitions.map((p) => `${p.from}>${p.to}:${p.count}`));

t.test('an AP renamed and put in another zone by a reload: its devices count there at once, and no move is reported', async (t) => {
  const snmpd = await startSnmpd({ community: 'lintel-ro', recordings: [recording('aruba-aos.snmpwalk')] });
  t.teardown(() => snmpd.stop());
  const poller = createPoller({ dialects: loadDialects() });
  t.teardown(() => poller.close());
  // one physical AP: `ap-3` in the lobby, then `cafe-1` in the cafe
  const before = configOf(['lobby', 'cafe'], [ap('ap-3', 'lobby', snmpd.port)]);
  const { daemon } = setupDaemon(t, before, poller);

  const first = await daemon.tick();
  const devices = first.counts.lobby ?? 0;
  t.ok(devices > 0, `the recorded AP carries devices (${devices})`);
  t.same(first.counts, { lobby: devices, cafe: 0 });

  t.same(await daemon.reconfigure({ config: configOf(['lobby', 'cafe'], [ap('cafe-1', 'cafe', snmpd.port)]) }), { applied: true, rezoned: 0 });
  const after = await ticks(daemon, TICKS_AFTER);
  t.same(after[0]?.counts, { lobby: 0, cafe: devices }, 'counted in the cafe from the first tick after the reload');
  t.same(after.at(-1)?.counts, { lobby: 0, cafe: devices });
  t.same(transitionsOf(after), [], 'no zoneTransition: nobody walked');
  t.equal(after.reduce((n, r) => n + r.stats.moved, 0), 0, 'no move counted');
});

const MACS = ['02:00:00:00:00:01', '02:00:00:00:00:02', '02:00:00:00:00:03'];

/** The same radio is `ap-3` (lobby) before and `cafe-1` (cafe) after; `ap-lobby` hears the devices faintly. */
const renamedRadio = (faintDbm: number) =>
  buildingPoller((name) => {
    if (name === 'ap-3' || name === 'cafe-1') return MACS.map((mac) => [mac, -55]);
    if (name === 'ap-lobby') return MACS.map((mac) => [mac, faintDbm]);
    return [];
  });

for (const faintDbm of [-80, -60]) {
  const how = faintDbm + 55 <= -tracker.switchMarginDb ? 'beyond the margin' : 'within the margin';
  t.test(`an AP renamed into another zone while its old zone still hears its devices (${how}): no move is reported`, async (t) => {
    const { daemon } = setupDaemon(t, configOf(['lobby', 'cafe'], [ap('ap-lobby', 'lobby'), ap('ap-3', 'lobby')]), renamedRadio(faintDbm));
    t.same((await daemon.tick()).counts, { lobby: 3, cafe: 0 });

    await daemon.reconfigure({ config: configOf(['lobby', 'cafe'], [ap('ap-lobby', 'lobby'), ap('cafe-1', 'cafe')]) });
    const after = await ticks(daemon, TICKS_AFTER);
    t.same(after[0]?.counts, { lobby: 0, cafe: 3 }, 'counted in the cafe from the first tick after the reload');
    t.same(after.at(-1)?.counts, { lobby: 0, cafe: 3 });
    t.same(transitionsOf(after), [], 'no zoneTransition: nobody walked');
    t.equal(after.reduce((n, r) => n + r.stats.moved, 0), 0, 'no move counted');
  });
}

t.test('a zone removed with its AP by a reload: devices heard elsewhere are counted there at once, with no move', async (t) => {
  // the annex AP hears them loudest; the cafe AP, through the wall, fainter
  const poller = buildingPoller((name) => {
    if (name === 'ap-annex') return MACS.map((mac) => [mac, -50]);
    if (name === 'ap-cafe') return MACS.map((mac) => [mac, -70]);
    return [];
  });
  const before = configOf(['lobby', 'cafe', 'annex'], [ap('ap-lobby', 'lobby'), ap('ap-cafe', 'cafe'), ap('ap-annex', 'annex')]);
  const { daemon } = setupDaemon(t, before, poller);
  t.same((await daemon.tick()).counts, { lobby: 0, cafe: 0, annex: 3 });

  await daemon.reconfigure({ config: configOf(['lobby', 'cafe'], [ap('ap-lobby', 'lobby'), ap('ap-cafe', 'cafe')]) });
  const after = await ticks(daemon, TICKS_AFTER);
  t.same(after[0]?.counts, { lobby: 0, cafe: 3 }, 'counted where they are heard from the first tick');
  t.same(transitionsOf(after), [], 'no move from a zone that no longer exists');
  t.same(after.at(-1)?.counts, { lobby: 0, cafe: 3 });
});

t.test('devices of a removed AP that nobody hears are gone as absent ones are, with no move', async (t) => {
  const poller = buildingPoller((name) => (name === 'ap-annex' ? MACS.map((mac) => [mac, -50]) : []));
  const { daemon } = setupDaemon(t, configOf(['lobby', 'annex'], [ap('ap-lobby', 'lobby'), ap('ap-annex', 'annex')]), poller);
  await daemon.tick();
  await daemon.reconfigure({ config: configOf(['lobby'], [ap('ap-lobby', 'lobby')]) });
  const after = await ticks(daemon, tracker.absentPolls);
  t.equal(after.at(-1)?.tracked, 0, `dropped after absentPolls (${tracker.absentPolls})`);
  t.same(transitionsOf(after), []);
});

t.test('a restart over a state saved before the AP was renamed into another zone reports no move either', async (t) => {
  const path = join(t.testdir({}), 'zones.sqlite');
  // the same radio: `ap-3` before the restart, `cafe-1` after
  const poller = buildingPoller((name) => (name === 'ap-3' || name === 'cafe-1' ? MACS.map((mac) => [mac, -55]) : []));
  const evening = collectorOn(t, path, configOf(['lobby', 'cafe'], [ap('ap-lobby', 'lobby'), ap('ap-3', 'lobby')]), poller);
  t.same((await evening.daemon.tick()).counts, { lobby: 3, cafe: 0 });
  await evening.stop();

  // started again at once: within the transition window, so the saved state is taken up as it is
  const morning = collectorOn(t, path, configOf(['lobby', 'cafe'], [ap('ap-lobby', 'lobby'), ap('cafe-1', 'cafe')]), poller);
  const after = await ticks(morning.daemon, TICKS_AFTER);
  t.same(after[0]?.counts, { lobby: 0, cafe: 3 }, 'counted in the cafe from the first tick');
  t.same(transitionsOf(after), [], 'no zoneTransition: nobody walked');
});

t.test('a restart over a state saved before the rename, the old zone still hearing the devices faintly, reports no move', async (t) => {
  const path = join(t.testdir({}), 'zones.sqlite');
  const poller = renamedRadio(-80);
  const evening = collectorOn(t, path, configOf(['lobby', 'cafe'], [ap('ap-lobby', 'lobby'), ap('ap-3', 'lobby')]), poller);
  t.same((await evening.daemon.tick()).counts, { lobby: 3, cafe: 0 });
  await evening.stop();

  const morning = collectorOn(t, path, configOf(['lobby', 'cafe'], [ap('ap-lobby', 'lobby'), ap('cafe-1', 'cafe')]), poller);
  const after = await ticks(morning.daemon, TICKS_AFTER);
  t.same(after[0]?.counts, { lobby: 0, cafe: 3 }, 'counted in the cafe from the first tick');
  t.same(transitionsOf(after), [], 'no zoneTransition: nobody walked');
});
