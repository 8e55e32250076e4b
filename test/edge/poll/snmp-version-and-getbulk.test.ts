/**
 * net-snmp speaks SNMPv1 unless told otherwise, and v1 has no GETBULK. This guards that every poll goes
 * out as v2c or v3 and walks with GetBulkRequest, by reading the datagrams on their way to the real
 * Net-SNMP snmpd through a loopback relay. It also polls a v3 user at authNoPriv.
 */
import t from 'tap';
import { createSocket, type Socket } from 'node:dgram';
import { loadDialects } from '../../../edge/src/poll/dialects.js';
import { createPoller } from '../../../edge/src/poll/poller.js';
import type { SnmpTarget } from '../../../edge/src/poll/types.js';
import { recording, startSnmpd, type RunningSnmpd } from '../../support/peers/snmpd.js';
import { readTlv } from './support/fake-snmp-agent.js';

const dialects = loadDialects();
const SNMP_VERSION = { 0: 'v1', 1: 'v2c', 3: 'v3' } as const;
const PDU = { 0xa0: 'get', 0xa1: 'getnext', 0xa5: 'getbulk' } as const;

/** One request as it crossed the wire: the message version, and the PDU type when it is not encrypted. */
interface Seen {
  version: string;
  pdu: string | null;
}

/** Reads the version and PDU tag of an SNMP request (v1/v2c: after the community; v3: in a plaintext scoped PDU). */
function inspect(datagram: Buffer): Seen {
  const message = readTlv(datagram, 0);
  const version = readTlv(datagram, message.start);
  const number = datagram[version.start]!;
  const name = SNMP_VERSION[number as keyof typeof SNMP_VERSION] ?? `unknown(${number})`;
  if (number !== 3) {
    const community = readTlv(datagram, version.end);
    const pdu = datagram[community.end]!;
    return { version: name, pdu: PDU[pdu as keyof typeof PDU] ?? `0x${pdu.toString(16)}` };
  }
  const globalData = readTlv(datagram, version.end);
  const securityParameters = readTlv(datagram, globalData.end);
  const data = readTlv(datagram, securityParameters.end);
  if (data.tag !== 0x30) return { version: name, pdu: null }; // encrypted (authPriv)
  const contextEngineId = readTlv(datagram, data.start);
  const contextName = readTlv(datagram, contextEngineId.end);
  const pdu = datagram[contextName.end]!;
  return { version: name, pdu: PDU[pdu as keyof typeof PDU] ?? `0x${pdu.toString(16)}` };
}

/** A UDP relay on loopback in front of snmpd that records every request it forwards. */
async function startRelay(t: { teardown(fn: () => unknown): void }, upstreamPort: number): Promise<{ port: number; seen: Seen[] }> {
  const seen: Seen[] = [];
  const front = createSocket('udp4');
  const upstreams = new Map<string, Socket>();
  front.on('message', (datagram, client) => {
    seen.push(inspect(datagram));
    const key = `${client.address}:${client.port}`;
    let upstream = upstreams.get(key);
    if (!upstream) {
      const socket = createSocket('udp4');
      socket.on('message', (answer) => front.send(answer, client.port, client.address));
      upstreams.set(key, socket);
      upstream = socket;
    }
    upstream.send(datagram, upstreamPort, '127.0.0.1');
  });
  await new Promise<void>((resolve) => front.bind(0, '127.0.0.1', () => resolve()));
  t.teardown(async () => {
    for (const socket of upstreams.values()) socket.close();
    await new Promise<void>((resolve) => front.close(() => resolve()));
  });
  return { port: front.address().port, seen };
}

let snmpd: RunningSnmpd;
t.before(async () => {
  snmpd = await startSnmpd({
    community: 'lintel-ro',
    v3Users: [{ name: 'auth-only', authProtocol: 'SHA', authKey: 'auth-only-pass-1' }],
    recordings: [recording('mikrotik.snmpwalk')],
  });
});
t.teardown(() => snmpd?.stop());

const MIKROTIK_STATIONS = [
  { mac: '00:0c:42:3a:ec:cf', rssiDbm: -41 },
  { mac: '6c:3b:6b:00:aa:01', rssiDbm: -57 },
  { mac: 'e4:5f:01:23:45:67', rssiDbm: -70 },
];

t.test('a v2c poll goes out as SNMPv2c and walks with GETBULK only', async (t) => {
  const relay = await startRelay(t, snmpd.port);
  const poller = createPoller({ dialects });
  t.teardown(() => poller.close());
  const target: SnmpTarget = { transport: 'snmp', host: '127.0.0.1', port: relay.port, version: '2c', community: 'lintel-ro' };
  const [result] = await poller.pollAll([{ name: 'ros6', zone: 'hall', dialect: 'mikrotik', target }], 10_000);
  t.match(result, { ok: true });
  t.same(result?.ok && [...result.stations].sort((a, b) => a.mac.localeCompare(b.mac)), MIKROTIK_STATIONS);
  t.ok(relay.seen.length > 0, `${relay.seen.length} requests relayed`);
  t.same([...new Set(relay.seen.map((s) => `${s.version} ${s.pdu}`))], ['v2c getbulk'], 'never SNMPv1, never GETNEXT');
});

t.test('a v3 poll at authNoPriv goes out as SNMPv3, walks with GETBULK, and reads the stations', async (t) => {
  const relay = await startRelay(t, snmpd.port);
  const poller = createPoller({ dialects });
  t.teardown(() => poller.close());
  const target: SnmpTarget = { transport: 'snmp', host: '127.0.0.1', port: relay.port, version: '3', user: 'auth-only', authProtocol: 'sha', authKey: 'auth-only-pass-1' };
  const [result] = await poller.pollAll([{ name: 'ros6', zone: 'hall', dialect: 'mikrotik', target }], 10_000);
  t.match(result, { ok: true });
  t.same(result?.ok && [...result.stations].sort((a, b) => a.mac.localeCompare(b.mac)), MIKROTIK_STATIONS);
  t.same([...new Set(relay.seen.map((s) => s.version))], ['v3']);
  const pdus = relay.seen.map((s) => s.pdu);
  t.ok(pdus.includes('getbulk'), 'the walk uses GETBULK');
  t.notOk(pdus.includes('getnext'), 'never GETNEXT');
  // the only other request is USM engine discovery, an empty GET
  t.ok(pdus.every((pdu) => pdu === 'getbulk' || pdu === 'get'), `PDUs: ${[...new Set(pdus)].join(', ')}`);
});
