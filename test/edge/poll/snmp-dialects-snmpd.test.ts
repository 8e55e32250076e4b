/**
 * The SNMP dialects against the real Net-SNMP snmpd, serving recorded AP tables through pass_persist.
 */
import t from 'tap';
import { chmodSync } from 'node:fs';
import { join } from 'node:path';
import { dialectInfoOf } from '../../../edge/src/config/dialects.js';
import { parseConfig } from '../../../edge/src/config/index.js';
import { loadDialects, type DialectCatalog } from '../../../edge/src/poll/dialects.js';
import { createPoller } from '../../../edge/src/poll/poller.js';
import { openNetSnmpSession } from '../../../edge/src/poll/snmp/session.js';
import type { AccessPoint, ApPollResult, SnmpTarget, StationSighting } from '../../../edge/src/poll/types.js';
import { recording, startSnmpd, type RunningSnmpd } from '../../support/peers/snmpd.js';
import { edgeRecording } from '../support/recordings.js';

const dialects = loadDialects();
const TIMEOUT_MS = 3000;
const v3User = { name: 'lintel', authProtocol: 'SHA' as const, authKey: 'auth-pass-123', privProtocol: 'AES' as const, privKey: 'priv-pass-456' };

let snmpd: RunningSnmpd;
let ros7: RunningSnmpd;
/** The recorded controllers while some of the APs behind them are down. */
let apsDown: RunningSnmpd;

t.before(async () => {
  [snmpd, ros7, apsDown] = await Promise.all([
    startSnmpd({
      community: 'lintel-ro',
      v3Users: [v3User],
      recordings: [
        ...['cisco-wlc.snmpwalk', 'aruba-aos.snmpwalk', 'mikrotik.snmpwalk', 'ruckus-zd.snmpwalk'].map(recording),
        ...['cisco-wlc-aps.snmpwalk', 'ruckus-zd-aps.snmpwalk'].map(edgeRecording),
      ],
    }),
    startSnmpd({ community: 'lintel-ro', recordings: ['mikrotik-ros7.snmpwalk', 'aruba-aos-malformed.snmpwalk'].map(recording) }),
    startSnmpd({ community: 'lintel-ro', recordings: ['cisco-wlc-ap-down.snmpwalk', 'ruckus-zd-ap-down.snmpwalk'].map(edgeRecording) }),
  ]);
});
t.teardown(async () => {
  await Promise.all([snmpd?.stop(), ros7?.stop(), apsDown?.stop()]);
});

/** The shipped dialects plus `<name>-no-status`: the same controller dialect without its AP status table. */
function withoutStatusTable(name: string): DialectCatalog {
  const dialect = dialects.get(name);
  if (dialect?.transport !== 'snmp' || !dialect.apStatus) throw new Error(`${name} is not a controller dialect with an AP status table`);
  const { apStatus: _apStatus, ...rest } = dialect;
  return new Map([...dialects, [`${name}-no-status`, { ...rest, name: `${name}-no-status` }]]);
}

const v2c = (server: RunningSnmpd, community = 'lintel-ro'): SnmpTarget => ({
  transport: 'snmp',
  host: server.host,
  port: server.port,
  version: '2c',
  community,
});
const v3 = (server: RunningSnmpd, privKey = v3User.privKey): SnmpTarget => ({
  transport: 'snmp',
  host: server.host,
  port: server.port,
  version: '3',
  user: v3User.name,
  authProtocol: 'sha',
  authKey: v3User.authKey,
  privProtocol: 'aes',
  privKey,
});

const byMac = (stations: StationSighting[]) => [...stations].sort((a, b) => a.mac.localeCompare(b.mac));
function summary(results: ApPollResult[]) {
  return results.map((r) => (r.ok ? { ap: r.ap, zone: r.zone, stations: byMac(r.stations) } : { ap: r.ap, zone: r.zone, error: r.error, reason: r.reason }));
}

t.test('cisco-wlc: one controller, one result per mapped AP, loudest row per client and AP, stale rows dropped', async (t) => {
  const poller = createPoller({ dialects });
  t.teardown(() => poller.close());
  const wlc: AccessPoint = {
    name: 'wlc-1',
    zone: 'unused',
    dialect: 'cisco-wlc',
    target: v2c(snmpd),
    apZones: { 'AP-Lobby-1': 'lobby', 'AP-Lobby-2': 'lobby', 'AP-Cafe-1': 'cafe' },
  };
  const results = await poller.pollAll([wlc], TIMEOUT_MS);
  t.same(summary(results), [
    { ap: 'AP-Lobby-1', zone: 'lobby', stations: [{ mac: 'f0:18:98:a1:b2:01', rssiDbm: -48 }] },
    {
      ap: 'AP-Lobby-2',
      zone: 'lobby',
      stations: [
        { mac: '3c:22:fb:0c:4d:02', rssiDbm: -66 },
        { mac: 'a4:83:e7:55:10:03', rssiDbm: -80 },
        { mac: 'dc:a6:32:9e:7f:04', rssiDbm: -62 },
      ],
    },
    {
      ap: 'AP-Cafe-1',
      zone: 'cafe',
      stations: [
        { mac: '3c:22:fb:0c:4d:02', rssiDbm: -58 },
        { mac: 'a4:83:e7:55:10:03', rssiDbm: -44 },
        { mac: 'f0:18:98:a1:b2:01', rssiDbm: -71 },
      ],
    },
  ]);
  for (const r of results) t.type(r.durationMs, 'number', `${r.ap} reports how long its poll took`);
});

t.test('aruba-aos over SNMPv3 authPriv: SNR converted to dBm; a zero SNR row is no reading, but its station is still listed, below every real one', async (t) => {
  const poller = createPoller({ dialects });
  t.teardown(() => poller.close());
  const [result] = await poller.pollAll([{ name: 'mc-1', zone: 'floor-2', dialect: 'aruba-aos', target: v3(snmpd) }], TIMEOUT_MS);
  t.same(summary(result ? [result] : []), [
    {
      ap: 'mc-1',
      zone: 'floor-2',
      stations: [
        { mac: '04:d3:b0:12:34:56', rssiDbm: -54 },
        { mac: '58:ce:2a:aa:00:11', rssiDbm: -68 },
        { mac: '9c:b6:d0:3e:21:7a', rssiDbm: -77 },
        { mac: 'b8:27:eb:01:02:03', rssiDbm: Number.NEGATIVE_INFINITY },
      ],
    },
  ]);
});

t.test('SNMPv3 without privacy against a user that requires it: a credentials failure, not an unknown error', async (t) => {
  const poller = createPoller({ dialects });
  t.teardown(() => poller.close());
  const { privProtocol: _privProtocol, privKey: _privKey, ...authNoPriv } = v3(snmpd) as SnmpTarget & { privProtocol?: string; privKey?: string };
  const [result] = await poller.pollAll([{ name: 'mc-1', zone: 'floor-2', dialect: 'aruba-aos', target: authNoPriv as SnmpTarget }], TIMEOUT_MS);
  t.match(result, { ap: 'mc-1', ok: false, reason: 'auth', error: /^SNMP credentials refused: / });
  t.notMatch(result && !result.ok ? result.error : '', new RegExp(v3User.authKey), 'no key in the error');
});

t.test('aruba-aos with apZones keyed by BSSID (any MAC spelling) splits per AP radio', async (t) => {
  const poller = createPoller({ dialects });
  t.teardown(() => poller.close());
  const results = await poller.pollAll(
    [{ name: 'mc-1', zone: 'floor-2', dialect: 'aruba-aos', target: v2c(snmpd), apZones: { '24:DE:C6:A0:01:10': 'east', '24-de-c6-a0-02-00': 'west' } }],
    TIMEOUT_MS,
  );
  t.same(summary(results), [
    { ap: '24:DE:C6:A0:01:10', zone: 'east', stations: [{ mac: '04:d3:b0:12:34:56', rssiDbm: -54 }, { mac: '58:ce:2a:aa:00:11', rssiDbm: -68 }] },
    { ap: '24-de-c6-a0-02-00', zone: 'west', stations: [{ mac: '9c:b6:d0:3e:21:7a', rssiDbm: -77 }, { mac: 'b8:27:eb:01:02:03', rssiDbm: Number.NEGATIVE_INFINITY }] },
  ]);
});

t.test('aruba-aos split per AP radio from a config file, as the collector loads it', async (t) => {
  const dir = t.testdir({ community: 'lintel-ro\n' });
  chmodSync(join(dir, 'community'), 0o600);
  const yaml = `
buildingId: hq
pollIntervalS: 10
requestTimeoutS: 3
zones: { east: {}, west: {} }
accessPoints:
  - name: mc-1
    dialect: aruba-aos
    transport: snmp
    host: ${snmpd.host}
    snmp: { version: 2c, port: ${snmpd.port}, communityFile: community }
    apZones:
      24-DE-C6-A0-01-10: { zone: east, name: east-radio }
      "24:de:c6:a0:02:00": { zone: west, name: west-radio }
`;
  const loaded = parseConfig(yaml, join(dir, 'config.yaml'), { dialects: dialectInfoOf(dialects) });
  if (!loaded.ok) t.fail(loaded.errors.join('\n'));
  if (!loaded.ok) return;
  const poller = createPoller({ dialects });
  t.teardown(() => poller.close());
  const results = await poller.pollAll(loaded.config.accessPoints, TIMEOUT_MS);
  t.same(summary(results), [
    { ap: '24-DE-C6-A0-01-10', zone: 'east', stations: [{ mac: '04:d3:b0:12:34:56', rssiDbm: -54 }, { mac: '58:ce:2a:aa:00:11', rssiDbm: -68 }] },
    { ap: '24:de:c6:a0:02:00', zone: 'west', stations: [{ mac: '9c:b6:d0:3e:21:7a', rssiDbm: -77 }, { mac: 'b8:27:eb:01:02:03', rssiDbm: Number.NEGATIVE_INFINITY }] },
  ]);
  t.same(loaded.config.reportNames, { '24-DE-C6-A0-01-10': 'east-radio', '24:de:c6:a0:02:00': 'west-radio' });
});

t.test('mikrotik: RouterOS 6 table (a station on two radios counts once, loudest) and RouterOS 7 table', async (t) => {
  const poller = createPoller({ dialects });
  t.teardown(() => poller.close());
  const results = await poller.pollAll(
    [
      { name: 'ros6', zone: 'hall', dialect: 'mikrotik', target: v2c(snmpd) },
      { name: 'ros7', zone: 'hall', dialect: 'mikrotik', target: v2c(ros7) },
    ],
    TIMEOUT_MS,
  );
  t.same(summary(results), [
    {
      ap: 'ros6',
      zone: 'hall',
      stations: [
        { mac: '00:0c:42:3a:ec:cf', rssiDbm: -41 },
        { mac: '6c:3b:6b:00:aa:01', rssiDbm: -57 },
        { mac: 'e4:5f:01:23:45:67', rssiDbm: -70 },
      ],
    },
    { ap: 'ros7', zone: 'hall', stations: [{ mac: '18:3e:ef:10:20:30', rssiDbm: -49 }, { mac: '2c:f0:a2:aa:bb:cc', rssiDbm: -66 }] },
  ]);
});

t.test('ruckus-zd: controller split by AP MAC; SNR converted; stations of unmapped APs ignored', async (t) => {
  const poller = createPoller({ dialects });
  t.teardown(() => poller.close());
  const results = await poller.pollAll(
    [{ name: 'zd', zone: 'unused', dialect: 'ruckus-zd', target: v3(snmpd), apZones: { 'c4:01:7c:3d:50:10': 'hall', 'c4:01:7c:3d:50:20': 'library', 'c4:01:7c:3d:50:30': 'attic' } }],
    TIMEOUT_MS,
  );
  t.same(summary(results), [
    { ap: 'c4:01:7c:3d:50:10', zone: 'hall', stations: [{ mac: '10:f1:f2:00:00:01', rssiDbm: -41 }, { mac: '10:f1:f2:00:00:03', rssiDbm: -73 }] },
    { ap: 'c4:01:7c:3d:50:20', zone: 'library', stations: [{ mac: '10:f1:f2:00:00:02', rssiDbm: -64 }] },
    { ap: 'c4:01:7c:3d:50:30', zone: 'attic', stations: [] },
  ]);
});

t.test('a wrong community or wrong v3 key fails that AP only; the others are still polled', async (t) => {
  const poller = createPoller({ dialects });
  t.teardown(() => poller.close());
  const results = await poller.pollAll(
    [
      { name: 'good', zone: 'hall', dialect: 'mikrotik', target: v2c(snmpd) },
      { name: 'bad-community', zone: 'hall', dialect: 'mikrotik', target: v2c(snmpd, 'not-the-community') },
      { name: 'bad-v3-key', zone: 'hall', dialect: 'aruba-aos', target: v3(snmpd, 'wrong-priv-key') },
      { name: 'controller-down', zone: 'x', dialect: 'ruckus-zd', target: v2c(snmpd, 'nope'), apZones: { 'c4:01:7c:3d:50:10': 'hall' } },
    ],
    800,
  );
  const [good, community, key, behindController] = results;
  t.equal(results.length, 4);
  t.equal(good?.ok, true);
  t.equal(good?.ok && good.stations.length, 3);
  t.match(community, { ap: 'bad-community', ok: false, reason: 'timeout' }, 'snmpd ignores a wrong community: silence');
  t.match(key, { ap: 'bad-v3-key', ok: false });
  t.match(behindController, { ap: 'c4:01:7c:3d:50:10', zone: 'hall', ok: false, reason: 'timeout' }, 'an AP behind a silent controller fails too');
  t.notMatch(JSON.stringify(results.filter((r) => !r.ok)), /priv-key|not-the-community/, 'no secret in an error');
});

t.test('a table whose signal column is not a number is reported, not read as an empty AP', async (t) => {
  const poller = createPoller({ dialects });
  t.teardown(() => poller.close());
  const [result] = await poller.pollAll([{ name: 'odd', zone: 'hall', dialect: 'aruba-aos', target: v2c(ros7) }], TIMEOUT_MS);
  t.match(result, { ok: false, reason: 'bad_output', error: '2 station rows, none readable with dialect aruba-aos' });
});

t.test('an agent without the table answers an empty AP', async (t) => {
  const poller = createPoller({ dialects });
  t.teardown(() => poller.close());
  const [result] = await poller.pollAll([{ name: 'empty', zone: 'hall', dialect: 'cisco-wlc', target: v2c(ros7), apZones: { 'AP-1': 'hall' } }], TIMEOUT_MS);
  t.same(summary(result ? [result] : []), [{ ap: 'AP-1', zone: 'hall', stations: [] }], 'no AP status table served either: read as without one');
});

const wlcAps = { 'AP-Lobby-1': 'lobby', 'AP-Lobby-2': 'lobby', 'AP-Cafe-1': 'cafe' };

t.test('cisco-wlc: an AP the controller reports down or does not list fails as ap_down; its neighbour gives its stations', async (t) => {
  const poller = createPoller({ dialects });
  t.teardown(() => poller.close());
  const results = await poller.pollAll([{ name: 'wlc-1', zone: 'unused', dialect: 'cisco-wlc', target: v2c(apsDown), apZones: wlcAps }], TIMEOUT_MS);
  t.same(summary(results), [
    { ap: 'AP-Lobby-1', zone: 'lobby', error: 'not joined to the controller (not listed in bsnAPTable)', reason: 'ap_down' },
    { ap: 'AP-Lobby-2', zone: 'lobby', error: 'not up on the controller: bsnAPOperationStatus is 3 (downloading)', reason: 'ap_down' },
    { ap: 'AP-Cafe-1', zone: 'cafe', stations: [{ mac: '3c:22:fb:0c:4d:02', rssiDbm: -58 }, { mac: 'a4:83:e7:55:10:03', rssiDbm: -44 }] },
  ]);
  for (const r of results) t.type(r.durationMs, 'number', `${r.ap} reports how long the controller's poll took`);
});

t.test('ruckus-zd: a disconnected AP and one missing from the AP table fail as ap_down; a connected one gives its stations', async (t) => {
  const poller = createPoller({ dialects });
  t.teardown(() => poller.close());
  const results = await poller.pollAll(
    [{ name: 'zd', zone: 'unused', dialect: 'ruckus-zd', target: v2c(apsDown), apZones: { 'C4-01-7C-3D-50-10': 'hall', 'c4:01:7c:3d:50:20': 'library', 'c4:01:7c:3d:50:30': 'attic' } }],
    TIMEOUT_MS,
  );
  t.same(summary(results), [
    { ap: 'C4-01-7C-3D-50-10', zone: 'hall', error: 'not up on the controller: ruckusZDWLANAPStatus is 0 (disconnected)', reason: 'ap_down' },
    { ap: 'c4:01:7c:3d:50:20', zone: 'library', error: 'not joined to the controller (not listed in ruckusZDWLANAPTable)', reason: 'ap_down' },
    { ap: 'c4:01:7c:3d:50:30', zone: 'attic', stations: [{ mac: '10:f1:f2:00:00:05', rssiDbm: -55 }] },
  ]);
});

t.test('a controller dialect without an AP status table reads a down AP as empty, as before', async (t) => {
  const poller = createPoller({ dialects: withoutStatusTable('cisco-wlc') });
  t.teardown(() => poller.close());
  const results = await poller.pollAll([{ name: 'wlc-1', zone: 'unused', dialect: 'cisco-wlc-no-status', target: v2c(apsDown), apZones: wlcAps }], TIMEOUT_MS);
  t.same(summary(results), [
    { ap: 'AP-Lobby-1', zone: 'lobby', stations: [] },
    { ap: 'AP-Lobby-2', zone: 'lobby', stations: [{ mac: 'dc:a6:32:9e:7f:04', rssiDbm: -62 }] },
    { ap: 'AP-Cafe-1', zone: 'cafe', stations: [{ mac: '3c:22:fb:0c:4d:02', rssiDbm: -58 }, { mac: 'a4:83:e7:55:10:03', rssiDbm: -44 }] },
  ]);
});

t.test('a status walk that fails is the controller failing: every AP behind it fails alike', async (t) => {
  // only the status table's columns go unanswered: the station table itself is walked fine
  const poller = createPoller({
    dialects,
    openSnmp: (target, options) => {
      const real = openNetSnmpSession(target, options);
      return {
        walk: (oid, maxRepetitions) => (oid.startsWith('1.3.6.1.4.1.14179.2.2.1.1.') ? Promise.reject(new Error('walk refused')) : real.walk(oid, maxRepetitions)),
        close: () => real.close(),
      };
    },
  });
  t.teardown(() => poller.close());
  const results = await poller.pollAll([{ name: 'wlc-1', zone: 'unused', dialect: 'cisco-wlc', target: v2c(apsDown), apZones: wlcAps }], TIMEOUT_MS);
  t.same(summary(results), [
    { ap: 'AP-Lobby-1', zone: 'lobby', error: 'walk refused', reason: 'error' },
    { ap: 'AP-Lobby-2', zone: 'lobby', error: 'walk refused', reason: 'error' },
    { ap: 'AP-Cafe-1', zone: 'cafe', error: 'walk refused', reason: 'error' },
  ]);
});
