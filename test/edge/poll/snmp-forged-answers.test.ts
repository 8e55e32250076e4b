/**
 * Answers forged by someone on the path to an AP are not counted. net-snmp takes an answer from any
 * address and port, matched by a request id sent in clear, and reads an SNMPv3 message with its security
 * flags cleared as plaintext, unauthenticated, even for an authPriv user: a forged answer that arrived
 * before the AP's had its made-up stations counted. Against the real snmpd behind a relay that has the
 * forged answers arrive first, the poll returns the AP's own stations.
 */
import t, { type Test } from 'tap';
import snmp from 'net-snmp';
import { loadDialects } from '../../../edge/src/poll/dialects.js';
import { createPoller } from '../../../edge/src/poll/poller.js';
import { acceptsAnswer, canonicalAddress } from '../../../edge/src/poll/snmp/answer-filter.js';
import type { AccessPoint, ApPollResult, SnmpTarget } from '../../../edge/src/poll/types.js';
import { recording, startSnmpd, type RunningSnmpd } from '../../support/peers/snmpd.js';
import { forgedV2cAnswer, forgedV3PlaintextAnswer, startForgingRelay, type Forged } from './support/forging-relay.js';

const v3User = { name: 'lintel', authProtocol: 'SHA' as const, authKey: 'auth-pass-123', privProtocol: 'AES' as const, privKey: 'priv-pass-456' };

/** wlsxWlanStationTable's wlanStaRSSI column, the only one aruba-aos walks without apZones. */
const RSSI_COLUMN = '1.3.6.1.4.1.14823.2.2.1.5.2.2.1.1.14';
/** Two made-up stations, then a cell of the next column, which ends the walk. */
const FORGED_VARBINDS: Array<[string, number]> = [
  [`${RSSI_COLUMN}.2.0.0.0.15.1`, 40],
  [`${RSSI_COLUMN}.2.0.0.0.15.2`, 40],
  ['1.3.6.1.4.1.14823.2.2.1.5.2.2.1.1.15.2.0.0.0.15.1', 1],
];
/** What the recorded controller lists (aruba-aos.snmpwalk). */
const REAL_STATIONS = ['04:d3:b0:12:34:56', '58:ce:2a:aa:00:11', '9c:b6:d0:3e:21:7a', 'b8:27:eb:01:02:03'];

let snmpd: RunningSnmpd;
t.before(async () => {
  snmpd = await startSnmpd({ community: 'lintel-ro', v3Users: [v3User], recordings: [recording('aruba-aos.snmpwalk')] });
});
t.teardown(() => snmpd?.stop());

async function pollThrough(t: Test, port: number, target: Partial<SnmpTarget>): Promise<ApPollResult | undefined> {
  const poller = createPoller({ dialects: loadDialects() });
  t.teardown(() => poller.close());
  const ap: AccessPoint = { name: 'mc-1', zone: 'floor-2', dialect: 'aruba-aos', target: { transport: 'snmp', host: '127.0.0.1', port, version: '2c', ...target } };
  const [result] = await poller.pollAll([ap], 3000);
  return result;
}

const stationsOf = (result: ApPollResult | undefined) => (result?.ok ? result.stations.map((s) => s.mac).sort() : result);
const only = (forged: Forged | false) => (forged ? [forged] : []);

t.test('v2c: an answer from another port, under the community and request id sent, is not read', async (t) => {
  const relay = await startForgingRelay(t, snmpd.port, (request) => {
    const datagram = forgedV2cAnswer(request, FORGED_VARBINDS);
    return only(datagram !== undefined && { from: 'elsewhere', datagram });
  });
  const result = await pollThrough(t, relay.port, { version: '2c', community: 'lintel-ro' });
  t.ok(relay.forged > 0, 'a forged answer was sent before each GetBulkRequest reached snmpd');
  t.same(stationsOf(result), REAL_STATIONS, "the AP's own stations, not the forged ones");
});

t.test('SNMPv3 authPriv: a plaintext answer from the AP\'s own address and port, flags cleared, is not read', async (t) => {
  const relay = await startForgingRelay(t, snmpd.port, (request) => {
    const datagram = forgedV3PlaintextAnswer(request, FORGED_VARBINDS);
    return only(datagram !== undefined && { from: 'agent', datagram });
  });
  const result = await pollThrough(t, relay.port, {
    version: '3',
    user: v3User.name,
    authProtocol: 'sha',
    authKey: v3User.authKey,
    privProtocol: 'aes',
    privKey: v3User.privKey,
  });
  t.ok(relay.forged > 0, 'a forged answer was sent before each encrypted request reached snmpd');
  t.same(stationsOf(result), REAL_STATIONS, "the AP's own stations, read at authPriv after the engine discovery");
});

t.test("what the agent itself answers still arrives: its Reports below the user's level, and answers to a host name", async (t) => {
  const v3 = { version: '3' as const, user: v3User.name, authProtocol: 'sha' as const, authKey: v3User.authKey, privProtocol: 'aes' as const, privKey: v3User.privKey };
  const wrongDigest = await pollThrough(t, snmpd.port, { ...v3, authKey: 'not-the-auth-key' });
  t.match(wrongDigest, { ok: false, reason: 'auth', error: /^SNMP credentials refused: / }, 'a wrong auth key: the unauthenticated wrongDigests Report is read');
  const unknownUser = await pollThrough(t, snmpd.port, { ...v3, user: 'nobody' });
  t.match(unknownUser, { ok: false, reason: 'auth', error: /^SNMP credentials refused: / }, 'an unknown user: the unauthenticated unknownUserNames Report is read');
  const byName = await pollThrough(t, snmpd.port, { host: 'localhost', version: '2c', community: 'lintel-ro' });
  t.same(stationsOf(byName), REAL_STATIONS, 'a host name: its answers come from the address it was looked up to');
});

t.test('for an SNMPv3 user, a datagram from the agent that is no SNMPv3 message is refused without throwing', async (t) => {
  const agent = { address: '127.0.0.1', family: 'IPv4' as const, port: 161, size: 0 };
  const expected = { addresses: new Set(['127.0.0.1']), port: 161, securityLevel: snmp.SecurityLevel.authPriv };
  const v3Header = [0x02, 0x01, 0x03, 0x30, 0x0b, 0x02, 0x01, 0x01, 0x02, 0x02, 0x05, 0xc0, 0x04, 0x01, 0x07, 0x02, 0x01, 0x03];
  for (const [name, bytes] of [
    ['empty', []],
    ['a length past the end', [0x30, 0x84, 0xff, 0xff, 0xff, 0xff]],
    ['a v2c message', [0x30, 0x03, 0x02, 0x01, 0x01]],
    ['a v3 header cut before its security parameters', [0x30, 0x12, ...v3Header]],
  ] as const) {
    t.equal(acceptsAnswer(Buffer.from(bytes), agent, expected), false, name);
  }
  t.equal(canonicalAddress('0:0:0:0:0:0:0:1'), '::1', 'IPv6 addresses are compared in one spelling');
});
