/**
 * A station its AP lists without a readable signal (0, out of range, not a number) is associated all the
 * same: it is counted, any readable signal beats it, it never moves a device by the margin, and its
 * sentinel is stored as a plain number. The poller keeps such rows, through the real sshd.
 */
import t from 'tap';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { loadDialects } from '../../../edge/src/poll/dialects.js';
import { createPoller } from '../../../edge/src/poll/poller.js';
import type { AccessPoint } from '../../../edge/src/poll/types.js';
import { createDeviceHasher } from '../../../edge/src/zones/device-key.js';
import { observe } from '../../../edge/src/zones/observe.js';
import { openSqliteZoneStore } from '../../../edge/src/zones/store.js';
import { applyPoll, emptyTrackerState, zoneCounts } from '../../../edge/src/zones/tracker.js';
import { UNREADABLE_RSSI_DBM } from '../../../edge/src/zones/types.js';
import { startSshd, type RunningSshd } from '../../support/peers/sshd.js';
import { ZONES, config, heard, run, silent } from './support/polls.js';

const repeat = <T>(n: number, item: T): T[] => Array.from({ length: n }, () => item);

t.test('a new device listed without a readable signal beside readable ones is counted', async (t) => {
  for (const unreadable of [Number.NaN, Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY, -5000]) {
    const outcome = applyPoll(emptyTrackerState(), { aps: [heard('ap-l', 'lobby', { d1: -60, d2: unreadable })] }, config);
    t.same(zoneCounts(outcome.state, ZONES), { lobby: 2, cafe: 0 }, `${unreadable}: both counted`);
    t.equal(outcome.state.devices.get('d2')?.rssiDbm, UNREADABLE_RSSI_DBM, `${unreadable}: held at the sentinel`);
  }
});

t.test('any readable signal beats an unreadable one, whatever the AP names', async (t) => {
  // ap-a sorts first and would win a tie; the faint readable -95 in the cafe still wins
  const { state } = run([[heard('ap-a', 'lobby', { d1: Number.NaN }), heard('ap-z', 'cafe', { d1: -95 })]]);
  t.equal(state.devices.get('d1')?.zone, 'cafe');
  t.equal(state.devices.get('d1')?.rssiDbm, -95);
});

t.test('a tracked device its AP keeps listing without a readable signal stays counted, never gone', async (t) => {
  const start = run([[heard('ap-l', 'lobby', { d1: -60 })]]).state;
  const unreadable = [heard('ap-l', 'lobby', { d1: 0 / 0 })];
  const outcome = run(repeat(config.absentPolls + 3, unreadable), start);
  t.same(zoneCounts(outcome.state, ZONES), { lobby: 1, cafe: 0 });
  t.equal(outcome.state.devices.get('d1')?.absentPolls, 0);
  t.same(outcome.moves, []);
});

t.test('an unreadable signal never moves a device by the margin; the dwell rule still does', async (t) => {
  const inLobbyUnreadable = run([[heard('ap-l', 'lobby', { d1: Number.NaN }), heard('ap-c', 'cafe', {})]]).state;
  t.equal(inLobbyUnreadable.devices.get('d1')?.zone, 'lobby');

  // both zones hear it: the cafe reads -40, the lobby cannot read it
  const both = [heard('ap-l', 'lobby', { d1: Number.NaN }), heard('ap-c', 'cafe', { d1: -40 })];
  const short = run(repeat(config.switchPolls - 1, both), inLobbyUnreadable);
  t.equal(short.state.devices.get('d1')?.zone, 'lobby', 'no margin over an unreadable incumbent');
  t.same(short.moves, []);
  t.same(run([both], short.state).moves, [{ from: 'lobby', to: 'cafe', count: 1 }], 'moved on the switchPolls-th poll');

  // only the cafe hears it and its last known signal is unreadable: no margin over that either
  const away = [heard('ap-l', 'lobby', {}), heard('ap-c', 'cafe', { d1: -40 })];
  const awayOnce = run([away], inLobbyUnreadable);
  t.equal(awayOnce.state.devices.get('d1')?.zone, 'lobby');
  t.equal(awayOnce.state.devices.get('d1')?.challengerPolls, 1);

  // its AP silent: frozen, and the cafe's -40 is no margin over an unreadable last signal
  const frozen = run([[silent('ap-l', 'lobby'), heard('ap-c', 'cafe', { d1: -40 })]], inLobbyUnreadable);
  t.equal(frozen.state.devices.get('d1')?.zone, 'lobby');
  t.equal(frozen.state.devices.get('d1')?.frozenPolls, 1);

  // and an unreadable sighting elsewhere never takes a device from a zone that reads it
  const inLobby = run([[heard('ap-l', 'lobby', { d1: -90 })]]).state;
  const faint = run(repeat(5, [heard('ap-l', 'lobby', { d1: -90 }), heard('ap-a', 'cafe', { d1: Number.NaN })]), inLobby, { ...config, switchMarginDb: 0 });
  t.equal(faint.state.devices.get('d1')?.zone, 'lobby');
  t.same(faint.moves, []);
});

t.test('the sentinel is stored as a plain number and loads back the same', async (t) => {
  const path = join(t.testdir({}), 'zones.sqlite');
  const store = openSqliteZoneStore(path);
  const outcome = applyPoll(emptyTrackerState(), { aps: [heard('ap-l', 'lobby', { d1: -60, d2: Number.NEGATIVE_INFINITY })] }, config);
  store.save(outcome);
  store.close();
  const raw = new Database(path, { readonly: true });
  t.teardown(() => raw.close());
  t.same(raw.prepare("SELECT typeof(rssi_dbm) AS type, rssi_dbm AS value FROM tracked_devices WHERE device_id = 'd2'").get(), {
    type: 'real',
    value: UNREADABLE_RSSI_DBM,
  });
  const again = openSqliteZoneStore(path);
  t.teardown(() => again.close());
  t.same(Object.fromEntries(again.load().devices), Object.fromEntries(outcome.state.devices));
});

t.test('the poller keeps a station whose signal it cannot read, below every readable one', async (t) => {
  // openwrt-ubus on hostapd: 0 is how some drivers write "unknown", and -150 is no Wi-Fi signal either
  const clients = (entries: Record<string, number>) => JSON.stringify({ freq: 5180, clients: Object.fromEntries(Object.entries(entries).map(([mac, signal]) => [mac, { assoc: true, signal }])) });
  let sshd: RunningSshd | undefined = await startSshd({
    commands: {
      'ubus call hostapd.mixed get_clients': { stdout: clients({ '02:00:00:00:00:01': -52, '02:00:00:00:00:02': 0, '02:00:00:00:00:03': -150 }) },
      'ubus call hostapd.unknown get_clients': { stdout: clients({ '02:00:00:00:00:04': 0, '02:00:00:00:00:05': 0 }) },
    },
  });
  t.teardown(() => sshd?.stop());
  const ap = (name: string, iface: string): AccessPoint => ({
    name,
    zone: 'lobby',
    dialect: 'openwrt-ubus',
    target: { transport: 'ssh', host: sshd!.host, port: sshd!.port, username: sshd!.username, privateKey: sshd!.clientPrivateKey, interface: iface },
  });
  const poller = createPoller({ dialects: loadDialects() });
  t.teardown(() => poller.close());
  const [mixed, unknown, both] = await poller.pollAll([ap('mixed', 'mixed'), ap('unknown', 'unknown'), ap('both', 'mixed,unknown')], 5000);
  await sshd.stop();
  sshd = undefined;

  t.same(mixed?.ok && [...mixed.stations].sort((a, b) => a.mac.localeCompare(b.mac)), [
    { mac: '02:00:00:00:00:01', rssiDbm: -52 },
    { mac: '02:00:00:00:00:02', rssiDbm: Number.NEGATIVE_INFINITY },
    { mac: '02:00:00:00:00:03', rssiDbm: Number.NEGATIVE_INFINITY },
  ]);
  t.match(unknown, { ok: false, reason: 'bad_output', error: '2 stations listed, none with a usable signal (dialect openwrt-ubus)' }, 'an AP of only unreadable rows is still bad output');
  t.same(
    both?.ok && [...both.stations].map((s) => s.mac).sort(),
    ['02:00:00:00:00:01', '02:00:00:00:00:02', '02:00:00:00:00:03', '02:00:00:00:00:04', '02:00:00:00:00:05'],
    'an interface of only unreadable rows still lists its stations when another interface of the AP is readable',
  );

  const outcome = applyPoll(emptyTrackerState(), observe(mixed ? [mixed] : [], createDeviceHasher(Buffer.alloc(32, 7))), config);
  t.same(zoneCounts(outcome.state, ['lobby']), { lobby: 3 }, 'all three associated stations are counted');
});
