/**
 * An AP given by a host name whose DNS never answers. The SNMP socket looked the name up with dns.lookup
 * for every datagram (several walks at once, each its own), and ssh2 for every connect; getaddrinfo runs
 * on libuv's 4-thread pool and the poll's deadline cannot cancel it. Each tick added stuck lookups
 * faster than the resolver gave them up, and every other lookup of the collector (the other APs by name,
 * the ingest post) queued behind them: the other APs timed out too. Now the poller looks an AP's name up
 * once per poll through a bounded limiter and hands the session the address: the stuck name holds one
 * thread, its AP fails alone (`timeout`), and the others answer.
 *
 * Against the real snmpd and sshd. The resolver (an outside service) is injected: its lookups of
 * `*.stuck.test` hold a real pool thread and never answer, `localhost` goes to the real dns.lookup, and
 * `*.gone.test` is answered as a name that does not exist.
 */
import { lookup } from 'node:dns/promises';
import t from 'tap';
import type { Resolver } from '../../../shared/lookup.js';
import { loadDialects } from '../../../edge/src/poll/dialects.js';
import { createPoller } from '../../../edge/src/poll/poller.js';
import type { AccessPoint, ApPollResult, SnmpTarget, SshTarget } from '../../../edge/src/poll/types.js';
import { recording, startSnmpd, type RunningSnmpd } from '../../support/peers/snmpd.js';
import { startSshd, type RunningSshd } from '../../support/peers/sshd.js';
import { stuckResolver } from '../../support/stuck-resolver.js';

const dialects = loadDialects();
const TIMEOUT_MS = 3000;
const POLLS = 4;
const v3User = { name: 'lintel', authProtocol: 'SHA' as const, authKey: 'auth-pass-123', privProtocol: 'AES' as const, privKey: 'priv-pass-456' };

/** What the recorded controller lists (aruba-aos.snmpwalk) and the recorded OpenWrt AP (openwrt-ubus.json). */
const SNMP_STATIONS = ['04:d3:b0:12:34:56', '58:ce:2a:aa:00:11', '9c:b6:d0:3e:21:7a', 'b8:27:eb:01:02:03'];
const SSH_STATIONS = ['b4:e6:2d:77:88:99', 'd8:3a:dd:01:02:03', 'f2:6e:0b:aa:bb:cc'];

let snmpd: RunningSnmpd;
let sshd: RunningSshd;
t.before(async () => {
  [snmpd, sshd] = await Promise.all([
    startSnmpd({ community: 'lintel-ro', v3Users: [v3User], recordings: [recording('aruba-aos.snmpwalk')] }),
    startSshd({ commands: { 'ubus call hostapd.phy0-ap0 get_clients': { stdoutFile: recording('openwrt-ubus.json') } } }),
  ]);
});
t.teardown(async () => {
  await Promise.all([snmpd?.stop(), sshd?.stop()]);
});

/** aruba-aos over SNMPv3 authPriv: its station table's columns are walked at once, a datagram each. */
const snmpAp = (name: string, host: string): AccessPoint => {
  const target: SnmpTarget = {
    transport: 'snmp',
    host,
    port: snmpd.port,
    version: '3',
    user: v3User.name,
    authProtocol: 'sha',
    authKey: v3User.authKey,
    privProtocol: 'aes',
    privKey: v3User.privKey,
  };
  return { name, zone: 'lab', dialect: 'aruba-aos', target };
};
const sshAp = (name: string, host: string): AccessPoint => {
  const target: SshTarget = {
    transport: 'ssh',
    host,
    port: sshd.port,
    username: sshd.username,
    privateKey: sshd.clientPrivateKey,
    hostKeySha256: `SHA256:${sshd.hostKeySha256}`,
  };
  return { name, zone: 'lab', dialect: 'openwrt-ubus', target };
};

const macsOf = (result: ApPollResult | undefined) => (result?.ok ? result.stations.map((s) => s.mac).sort() : result);

const notFound = (hostname: string) => Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });

/**
 * The stuck resolver, with every lookup it is asked for noted, and `*.gone.test` answered as not found.
 * From teardown on, a stuck name is answered as a resolver that gave up: the limiter starts a name it
 * had queued once a stuck lookup is released, and that one would block past the release.
 */
function testResolver(t: Parameters<typeof stuckResolver>[0]) {
  const stuck = stuckResolver(t);
  // after the stuck resolver's: tap runs teardowns last added first, so this one runs before the release
  let tornDown = false;
  t.teardown(() => {
    tornDown = true;
  });
  const asked: string[] = [];
  const resolve: Resolver = (hostname, options, callback) => {
    asked.push(hostname);
    if (hostname.endsWith('.gone.test') || (tornDown && hostname.endsWith('.stuck.test'))) {
      process.nextTick(callback, notFound(hostname), []);
      return;
    }
    stuck.resolve(hostname, options, callback);
  };
  return { resolve, asked, stuck: stuck.stuck, unexpected: stuck.unexpected };
}

t.test('an AP whose name never resolves fails alone, tick after tick; the APs by name answer, and its name holds one lookup', async (t) => {
  const resolver = testResolver(t);
  const poller = createPoller({ dialects, resolve: resolver.resolve });
  t.teardown(() => poller.close());
  const aps = [snmpAp('stuck', 'mc.stuck.test'), snmpAp('snmp-by-name', 'localhost'), sshAp('ssh-by-name', 'localhost'), snmpAp('gone', 'mc.gone.test')];

  for (let poll = 1; poll <= POLLS; poll++) {
    const [stuck, snmp, ssh, gone] = await poller.pollAll(aps, TIMEOUT_MS);
    t.match(stuck, { ap: 'stuck', ok: false, reason: 'timeout', error: /^AP host mc\.stuck\.test (did not answer its DNS lookup|was not looked up: its DNS lookup did not answer)/ }, `poll ${poll}: the stuck AP times out`);
    t.same(macsOf(snmp), SNMP_STATIONS, `poll ${poll}: the SNMP AP by name answers`);
    t.same(macsOf(ssh), SSH_STATIONS, `poll ${poll}: the SSH AP by name answers`);
    t.match(gone, { ap: 'gone', ok: false, reason: 'error', error: 'AP host mc.gone.test could not be looked up (ENOTFOUND)' }, `poll ${poll}: a name that does not exist fails its AP`);
  }

  t.same(resolver.stuck, ['mc.stuck.test'], 'the stuck name was looked up once: one thread held, not one per datagram or tick');
  t.equal(
    resolver.asked.filter((host) => host === 'localhost').length,
    2 * POLLS,
    'each AP by name was looked up once per poll (SNMP for IPv4, SSH for any family), not per datagram',
  );
  const local = await lookup('localhost');
  t.ok(local.address, 'a lookup elsewhere in the process (the ingest post) still gets a thread and answers');
  t.same(resolver.unexpected, [], 'no other name was looked up');
});

t.test('APs on several names that never resolve hold at most two lookup threads; APs by address and the process go on', async (t) => {
  const resolver = testResolver(t);
  const poller = createPoller({ dialects, resolve: resolver.resolve });
  t.teardown(() => poller.close());
  const stuckNames = ['a.stuck.test', 'b.stuck.test', 'c.stuck.test', 'd.stuck.test'];
  const aps = [
    ...stuckNames.map((host, i) => (i % 2 === 0 ? snmpAp(`stuck-${host}`, host) : sshAp(`stuck-${host}`, host))),
    snmpAp('snmp-by-address', '127.0.0.1'),
    sshAp('ssh-by-address', '127.0.0.1'),
  ];

  for (let poll = 1; poll <= 2; poll++) {
    const results = await poller.pollAll(aps, TIMEOUT_MS);
    for (const result of results.slice(0, stuckNames.length)) t.match(result, { ok: false, reason: 'timeout', error: /^AP host [a-d]\.stuck\.test / }, `poll ${poll}: ${result.ap} times out`);
    t.same(macsOf(results[stuckNames.length]), SNMP_STATIONS, `poll ${poll}: the SNMP AP by address answers`);
    t.same(macsOf(results[stuckNames.length + 1]), SSH_STATIONS, `poll ${poll}: the SSH AP by address answers`);
  }

  t.equal(resolver.stuck.length, 2, 'two lookups were started: the AP lookup slots');
  t.equal(new Set(resolver.stuck).size, 2, 'of two distinct names');
  const local = await lookup('localhost');
  t.ok(local.address, 'a lookup elsewhere in the process still gets a thread and answers');
  t.same(resolver.unexpected, [], 'no other name was looked up');
});

t.test('an AP given by host name is polled as before, over SNMP and SSH, with the system resolver', async (t) => {
  const poller = createPoller({ dialects });
  t.teardown(() => poller.close());
  const [snmp, ssh] = await poller.pollAll([snmpAp('snmp-by-name', 'localhost'), sshAp('ssh-by-name', 'localhost')], TIMEOUT_MS);
  t.same(macsOf(snmp), SNMP_STATIONS, "the SNMP AP's answers come from the address its name was looked up to");
  t.same(macsOf(ssh), SSH_STATIONS, 'the SSH AP is reached at the address its name was looked up to');
});
