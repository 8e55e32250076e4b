/**
 * A station its AP lists without a numeric signal (no signal line or field, null, a string, no signal
 * cell in its SNMP row) is associated all the same: every dialect returns it, the poller keeps it below
 * every real reading, and the tracker counts it in its AP's zone. Through the real sshd and snmpd.
 */
import t from 'tap';
import { loadDialects } from '../../../edge/src/poll/dialects.js';
import { createPoller } from '../../../edge/src/poll/poller.js';
import type { AccessPoint, ApPollResult, StationSighting } from '../../../edge/src/poll/types.js';
import { createDeviceHasher } from '../../../edge/src/zones/device-key.js';
import { observe } from '../../../edge/src/zones/observe.js';
import { applyPoll, emptyTrackerState, zoneCounts } from '../../../edge/src/zones/tracker.js';
import { DEFAULT_TRACKER_CONFIG } from '../../../edge/src/zones/types.js';
import { startSnmpd, type RunningSnmpd } from '../../support/peers/snmpd.js';
import { startSshd, type RunningSshd } from '../../support/peers/sshd.js';
import { edgeRecording } from '../support/recordings.js';

const TIMEOUT_MS = 5000;
const UNKNOWN = Number.NEGATIVE_INFINITY;

/** An `iw station dump` block; without `signal` the block has no signal line, as some drivers print it. */
const iwBlock = (mac: string, signal?: number) =>
  [`Station ${mac} (on wlan0)`, '\tinactive time:\t20 ms', ...(signal === undefined ? [] : [`\tsignal:  \t${signal} dBm`]), '\tconnected time:\t61 seconds'].join('\n');

const COMMANDS = {
  'iw dev mixed station dump': { stdout: `${iwBlock('02:00:00:00:00:01', -52)}\n${iwBlock('02:00:00:00:00:02')}\n` },
  'iw dev nosignal station dump': { stdout: `${iwBlock('02:00:00:00:00:0a')}\n` },
  'ubus call hostapd.mixed get_clients': {
    stdout: JSON.stringify({ freq: 5180, clients: { '02:00:00:00:00:03': { assoc: true, signal: -60 }, '02:00:00:00:00:04': { assoc: true } } }),
  },
  'mca-dump': {
    stdout: JSON.stringify({
      vap_table: [{ name: 'ath0', sta_table: [{ mac: '02:00:00:00:00:05', signal: -70 }, { mac: '02:00:00:00:00:06', signal: null, rssi: 0 }] }],
    }),
  },
};

let sshd: RunningSshd;
let snmpd: RunningSnmpd;

t.before(async () => {
  [sshd, snmpd] = await Promise.all([
    startSshd({ commands: COMMANDS }),
    startSnmpd({ community: 'lintel-ro', recordings: [edgeRecording('aruba-aos-unknown-signal.snmpwalk')] }),
  ]);
});
t.teardown(async () => {
  await Promise.all([sshd?.stop(), snmpd?.stop()]);
});

const sshAp = (name: string, zone: string, dialect: string, iface?: string): AccessPoint => ({
  name,
  zone,
  dialect,
  target: { transport: 'ssh', host: sshd.host, port: sshd.port, username: sshd.username, privateKey: sshd.clientPrivateKey, interface: iface },
});
const arubaSplit = (): AccessPoint => ({
  name: 'mc-1',
  zone: 'unused',
  dialect: 'aruba-aos',
  target: { transport: 'snmp', host: snmpd.host, port: snmpd.port, version: '2c', community: 'lintel-ro' },
  apZones: { '24:de:c6:a0:01:10': 'east', '24:de:c6:a0:02:00': 'west' },
});

const byMac = (stations: StationSighting[]) => [...stations].sort((a, b) => a.mac.localeCompare(b.mac));
function summary(results: ApPollResult[]) {
  return results.map((r) => (r.ok ? { ap: r.ap, zone: r.zone, stations: byMac(r.stations) } : { ap: r.ap, zone: r.zone, reason: r.reason, error: r.error }));
}

t.test('every dialect keeps a station listed without a signal, below every real reading, and it is counted in its zone', async (t) => {
  const poller = createPoller({ dialects: loadDialects() });
  t.teardown(() => poller.close());
  const results = await poller.pollAll(
    [sshAp('owrt-iw', 'lobby', 'openwrt-iw', 'mixed'), sshAp('owrt-ubus', 'cafe', 'openwrt-ubus', 'mixed'), sshAp('u6', 'attic', 'unifi'), arubaSplit()],
    TIMEOUT_MS,
  );
  t.same(summary(results), [
    { ap: 'owrt-iw', zone: 'lobby', stations: [{ mac: '02:00:00:00:00:01', rssiDbm: -52 }, { mac: '02:00:00:00:00:02', rssiDbm: UNKNOWN }] },
    { ap: 'owrt-ubus', zone: 'cafe', stations: [{ mac: '02:00:00:00:00:03', rssiDbm: -60 }, { mac: '02:00:00:00:00:04', rssiDbm: UNKNOWN }] },
    { ap: 'u6', zone: 'attic', stations: [{ mac: '02:00:00:00:00:05', rssiDbm: -70 }, { mac: '02:00:00:00:00:06', rssiDbm: UNKNOWN }] },
    // 02:..:12 has a wlanStaRSSI of "n/a", 02:..:13 none at all; SNR 41 and 30 over the -95 dBm floor
    { ap: '24:de:c6:a0:01:10', zone: 'east', stations: [{ mac: '02:00:00:00:00:11', rssiDbm: -54 }, { mac: '02:00:00:00:00:12', rssiDbm: UNKNOWN }] },
    { ap: '24:de:c6:a0:02:00', zone: 'west', stations: [{ mac: '02:00:00:00:00:13', rssiDbm: UNKNOWN }, { mac: '02:00:00:00:00:14', rssiDbm: -65 }] },
  ]);

  const { state } = applyPoll(emptyTrackerState(), observe(results, createDeviceHasher(Buffer.alloc(32, 3))), DEFAULT_TRACKER_CONFIG);
  t.same(
    zoneCounts(state, ['lobby', 'cafe', 'attic', 'east', 'west']),
    { lobby: 2, cafe: 2, attic: 2, east: 2, west: 2 },
    'each signal-less station is counted in the zone of the AP that lists it',
  );
});

t.test('an answer where no station has a signal is still output the dialect cannot read', async (t) => {
  const poller = createPoller({ dialects: loadDialects() });
  t.teardown(() => poller.close());
  const [iw] = await poller.pollAll([sshAp('owrt-iw', 'lobby', 'openwrt-iw', 'nosignal')], TIMEOUT_MS);
  t.match(iw, { ok: false, reason: 'bad_output', error: '1 stations listed, none with a usable signal (dialect openwrt-iw)' });
});
