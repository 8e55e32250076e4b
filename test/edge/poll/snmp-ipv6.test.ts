/**
 * An SNMP AP at an IPv6 address, against the real snmpd listening on the IPv6 loopback: the config takes
 * IPv6 hosts and the unit allows IPv6 to the APs, but the session always opened an IPv4 socket, so such an
 * AP could never be polled.
 */
import t from 'tap';
import { createSocket } from 'node:dgram';
import { loadDialects } from '../../../edge/src/poll/dialects.js';
import { createPoller } from '../../../edge/src/poll/poller.js';
import { recording, startSnmpd } from '../../support/peers/snmpd.js';

/** A UDP port free on ::1 a moment ago, or undefined when this machine has no IPv6 loopback. */
async function freeUdp6Port(): Promise<number | undefined> {
  const socket = createSocket('udp6');
  try {
    return await new Promise<number>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(0, '::1', () => resolve(socket.address().port));
    });
  } catch {
    return undefined;
  } finally {
    socket.close();
  }
}

const port = await freeUdp6Port();

t.test('an AP at ::1 is polled over UDP/IPv6', { skip: port === undefined && 'no IPv6 loopback (::1) on this machine' }, async (t) => {
  if (port === undefined) return;
  const snmpd = await startSnmpd({
    community: 'lintel-ro',
    recordings: [recording('mikrotik.snmpwalk')],
    extraConfig: ['rocommunity6 lintel-ro ::1', `agentaddress udp6:[::1]:${port}`],
  });
  t.teardown(() => snmpd.stop());
  const poller = createPoller({ dialects: loadDialects() });
  t.teardown(() => poller.close());
  const target = { transport: 'snmp' as const, port, version: '2c' as const, community: 'lintel-ro' };
  const [v6, v4] = await poller.pollAll(
    [
      { name: 'router-v6', zone: 'lab', dialect: 'mikrotik', target: { ...target, host: '::1' } },
      { name: 'router-v4', zone: 'lab', dialect: 'mikrotik', target: { ...target, host: '127.0.0.1', port: snmpd.port } },
    ],
    3000,
  );
  t.match(v6, { ap: 'router-v6', ok: true });
  t.same(v6?.ok && v6.stations, v4?.ok && v4.stations, 'the same stations as over IPv4');
  t.ok(v4?.ok && v4.stations.length > 0, 'the recording has stations');
});
