/**
 * One AP's silence or failure never stops the tick: every AP is polled at once, each bounded by the
 * timeout, and pollAll always resolves with one result per (physical) AP.
 */
import t, { type Test } from 'tap';
import { createSocket } from 'node:dgram';
import { loadDialects } from '../../../edge/src/poll/dialects.js';
import { checkAccessPoint, createPoller } from '../../../edge/src/poll/poller.js';
import { openNetSnmpSession } from '../../../edge/src/poll/snmp/session.js';
import type { AccessPoint, SnmpTarget } from '../../../edge/src/poll/types.js';
import { recording, startSnmpd, type RunningSnmpd } from '../../support/peers/snmpd.js';

const dialects = loadDialects();
let snmpd: RunningSnmpd;
t.before(async () => {
  snmpd = await startSnmpd({ recordings: [recording('mikrotik.snmpwalk')] });
});
t.teardown(() => snmpd?.stop());

const snmp = (port: number, community = 'public'): SnmpTarget => ({ transport: 'snmp', host: '127.0.0.1', port, version: '2c', community });

t.test('an address that never answers times out alone; the others answer in the same tick', async (t) => {
  // a bound UDP socket that reads every request and answers none
  const blackHole = createSocket('udp4');
  let datagrams = 0;
  blackHole.on('message', () => datagrams++);
  await new Promise<void>((resolve) => blackHole.bind(0, '127.0.0.1', () => resolve()));
  t.teardown(() => new Promise<void>((resolve) => blackHole.close(() => resolve())));

  const poller = createPoller({ dialects });
  t.teardown(() => poller.close());
  const aps: AccessPoint[] = [
    { name: 'silent', zone: 'a', dialect: 'mikrotik', target: snmp(blackHole.address().port) },
    { name: 'ok-1', zone: 'a', dialect: 'mikrotik', target: snmp(snmpd.port) },
    { name: 'ok-2', zone: 'b', dialect: 'mikrotik', target: snmp(snmpd.port) },
  ];
  // the bound is wide so that a loaded machine's real snmpd still answers inside it; the silent AP
  // waits it out whatever it is
  const results = await poller.pollAll(aps, 5000);
  t.same(
    results.map((r) => [r.ap, r.ok]),
    [
      ['silent', false],
      ['ok-1', true],
      ['ok-2', true],
    ],
  );
  t.match(results[0], { reason: 'timeout', error: /^no complete answer within 5000 ms/ });
  t.ok(datagrams >= 1, 'the silent AP was asked');
});

t.test('every AP of a tick is polled at once: all sessions open before any walk ends', async (t) => {
  // the real net-snmp sessions to the real snmpd, with each open and each finished walk noted in order
  const events: string[] = [];
  const poller = createPoller({
    dialects,
    openSnmp: (target, options) => {
      const session = openNetSnmpSession(target, options);
      events.push('open');
      return {
        walk: async (oid, maxRepetitions) => {
          try {
            return await session.walk(oid, maxRepetitions);
          } finally {
            events.push('walked');
          }
        },
        close: () => session.close(),
      };
    },
  });
  t.teardown(() => poller.close());
  const aps: AccessPoint[] = ['ap-1', 'ap-2', 'ap-3'].map((name) => ({ name, zone: 'a', dialect: 'mikrotik', target: snmp(snmpd.port) }));
  const results = await poller.pollAll(aps, 10_000);
  t.same(results.map((r) => r.ok), [true, true, true]);
  const opens = events.flatMap((e, i) => (e.startsWith('open') ? [i] : []));
  const firstWalked = events.findIndex((e) => e.startsWith('walked'));
  t.equal(opens.length, 3, 'one session per AP');
  t.ok(firstWalked > Math.max(...opens), `no AP waits for another: ${events.join(', ')}`);
});

/** A bound UDP socket that reads every request and answers none: an AP that went silent mid-walk. */
async function silentAp(t: Test): Promise<number> {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
  t.teardown(() => new Promise<void>((resolve) => socket.close(() => resolve())));
  socket.on('message', () => undefined);
  return socket.address().port;
}

t.test('a session still walking at the deadline is closed', async (t) => {
  const port = await silentAp(t);
  const closed: string[] = [];
  const poller = createPoller({
    dialects,
    // the real net-snmp session to a silent AP, its close noted
    openSnmp: (target, options) => {
      const session = openNetSnmpSession(target, options);
      return { walk: (oid, maxRepetitions) => session.walk(oid, maxRepetitions), close: () => (closed.push(`${target.host}:${target.port}`), session.close()) };
    },
  });
  t.teardown(() => poller.close());
  const results = await poller.pollAll([{ name: 'hung', zone: 'a', dialect: 'aruba-aos', target: snmp(port) }], 300);
  t.match(results, [{ ap: 'hung', ok: false, reason: 'timeout' }]);
  t.same(closed, [`127.0.0.1:${port}`]);
});

t.test('a failing session is that AP\'s error, never a rejected tick', async (t) => {
  const poller = createPoller({
    dialects,
    openSnmp: () => {
      throw new Error('EMFILE: too many open files');
    },
  });
  t.teardown(() => poller.close());
  const results = await poller.pollAll([{ name: 'x', zone: 'a', dialect: 'aruba-aos', target: snmp(9) }], 100);
  t.match(results, [{ ap: 'x', ok: false, reason: 'error', error: 'EMFILE: too many open files' }]);
});

t.test('configuration problems are results too, and checkAccessPoint names them up front', async (t) => {
  const poller = createPoller({ dialects });
  t.teardown(() => poller.close());
  const bad: AccessPoint[] = [
    { name: 'typo', zone: 'a', dialect: 'cisco-wcl', target: snmp(snmpd.port) },
    { name: 'wlc', zone: 'a', dialect: 'cisco-wlc', target: snmp(snmpd.port) },
    { name: 'mixed', zone: 'a', dialect: 'unifi', target: snmp(snmpd.port) },
    { name: 'v3', zone: 'a', dialect: 'aruba-aos', target: { transport: 'snmp', host: '127.0.0.1', port: snmpd.port, version: '3' } },
  ];
  const results = await poller.pollAll(bad, 500);
  t.same(
    results.map((r) => !r.ok && r.reason),
    ['config', 'config', 'config', 'config'],
  );
  t.match(checkAccessPoint(bad[0] as AccessPoint, dialects), [/^unknown dialect "cisco-wcl" \(known: aruba-aos, cisco-wlc,/]);
  t.same(checkAccessPoint(bad[1] as AccessPoint, dialects), ['dialect cisco-wlc is a controller: apZones must map each AP behind it to a zone']);
  t.same(checkAccessPoint(bad[2] as AccessPoint, dialects), ['dialect unifi is read over ssh, but the target is snmp']);
  t.same(checkAccessPoint(bad[3] as AccessPoint, dialects), ['SNMP v3 needs a user']);
  t.same(checkAccessPoint({ name: 'ok', zone: 'a', dialect: 'mikrotik', target: snmp(1) }, dialects), []);
});

t.test('close() ends polls in flight and refuses new ones, still without rejecting', async (t) => {
  const port = await silentAp(t);
  const poller = createPoller({ dialects });
  const inFlight = poller.pollAll([{ name: 'x', zone: 'a', dialect: 'aruba-aos', target: snmp(port) }], 60_000);
  await new Promise((resolve) => setImmediate(resolve));
  await poller.close();
  t.match(await inFlight, [{ ap: 'x', ok: false, error: 'poller closed' }]);
  t.match(await poller.pollAll([{ name: 'y', zone: 'a', dialect: 'aruba-aos', target: snmp(9) }], 100), [{ ok: false, error: 'poller closed' }]);
});
