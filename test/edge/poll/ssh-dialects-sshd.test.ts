/**
 * The SSH dialects against the real OpenSSH sshd: key auth, and a ForceCommand that prints recorded
 * AP output for the command the poller sends.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadDialects } from '../../../edge/src/poll/dialects.js';
import { createPoller } from '../../../edge/src/poll/poller.js';
import type { AccessPoint, SshTarget, StationSighting } from '../../../edge/src/poll/types.js';
import { recording } from '../../support/peers/snmpd.js';
import { generateKeyPair, startSshd, type RunningSshd } from '../../support/peers/sshd.js';

const dialects = loadDialects();
const TIMEOUT_MS = 5000;
let sshd: RunningSshd;

t.before(async () => {
  sshd = await startSshd({
    commands: {
      'iw dev phy0-ap0 station dump': { stdoutFile: recording('openwrt-iw-phy0-ap0.txt') },
      'iw dev phy1-ap0 station dump': { stdoutFile: recording('openwrt-iw-phy1-ap0.txt') },
      'iw dev wlan9 station dump': { stderr: 'command failed: No such device (-19)\n', exitCode: 237 },
      // a wrapper on the AP that reports the error but not its status
      'iw dev wlan8 station dump': { stderr: 'command failed: No such device (-19)\n', exitCode: 0 },
      'iw dev wlan7 station dump': { stdoutFile: recording('openwrt-iw-phy1-ap0.txt'), stderr: 'warning: debugfs not mounted\n' },
      'ubus call hostapd.phy0-ap0 get_clients': { stdoutFile: recording('openwrt-ubus.json') },
      'ubus call hostapd.wlan1 get_clients': { stdoutFile: recording('openwrt-ubus-no-signal.json') },
      'ubus call hostapd.garbage get_clients': { stdout: '<html><body>Unauthorized</body></html>\n' },
      'ubus call hostapd.slow get_clients': { stdoutFile: recording('openwrt-ubus.json'), delayMs: 20_000 },
      'mca-dump': { stdoutFile: recording('unifi-mca-dump.json') },
    },
  });
});
t.teardown(() => sshd?.stop());

function target(overrides: Partial<SshTarget> = {}): SshTarget {
  return {
    transport: 'ssh',
    host: sshd.host,
    port: sshd.port,
    username: sshd.username,
    privateKey: sshd.clientPrivateKey,
    hostKeySha256: `SHA256:${sshd.hostKeySha256}`,
    ...overrides,
  };
}
const ap = (name: string, dialect: string, overrides: Partial<SshTarget> = {}): AccessPoint => ({ name, zone: 'lab', dialect, target: target(overrides) });
const byMac = (stations: StationSighting[]) => [...stations].sort((a, b) => a.mac.localeCompare(b.mac));

t.test('openwrt-iw on two radios, openwrt-ubus and unifi, with the host key pinned', async (t) => {
  const poller = createPoller({ dialects });
  t.teardown(() => poller.close());
  const [iw, ubus, unifi] = await poller.pollAll(
    [ap('owrt-iw', 'openwrt-iw', { interface: 'phy0-ap0, phy1-ap0' }), ap('owrt-ubus', 'openwrt-ubus'), ap('u6-lite', 'unifi')],
    TIMEOUT_MS,
  );
  t.same(iw?.ok && byMac(iw.stations), [
    { mac: '04:d3:b0:12:34:56', rssiDbm: -52 },
    { mac: '2a:11:6f:c0:de:01', rssiDbm: -81 },
    { mac: '7c:2e:bd:9a:01:fe', rssiDbm: -67 },
    { mac: '90:e2:02:33:44:55', rssiDbm: -59 },
  ]);
  t.same(ubus?.ok && byMac(ubus.stations), [
    { mac: 'b4:e6:2d:77:88:99', rssiDbm: -85 },
    { mac: 'd8:3a:dd:01:02:03', rssiDbm: -48 },
    { mac: 'f2:6e:0b:aa:bb:cc', rssiDbm: -73 },
  ]);
  t.same(unifi?.ok && byMac(unifi.stations), [
    { mac: '3c:06:30:ab:cd:ef', rssiDbm: -66 },
    { mac: 'a0:78:17:5e:11:22', rssiDbm: -49 },
  ]);
});

t.test('a key sshd does not accept, or a host key that is not the pinned one, fails that AP only', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'lintel-keys-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const stranger = generateKeyPair(dir, 'stranger');
  const poller = createPoller({ dialects });
  t.teardown(() => poller.close());
  const results = await poller.pollAll(
    [
      ap('wrong-key', 'unifi', { privateKey: stranger.privateKey }),
      ap('wrong-host', 'unifi', { hostKeySha256: stranger.sha256 }),
      ap('not-a-key', 'unifi', { privateKey: 'hello' }),
      ap('fine', 'unifi', { hostKeySha256: undefined }),
    ],
    TIMEOUT_MS,
  );
  t.match(results[0], { ap: 'wrong-key', ok: false, reason: 'auth', error: 'authentication failed (key not accepted)' });
  t.match(results[1], { ap: 'wrong-host', ok: false, reason: 'auth', error: 'host key does not match the pinned SHA-256 fingerprint' });
  t.match(results[2], { ap: 'not-a-key', ok: false, reason: 'config', error: /private key cannot be parsed/ });
  t.match(results[3], { ap: 'fine', ok: true });
});

t.test('a failing command, malformed output and output without signal are reported, not read as empty', async (t) => {
  const poller = createPoller({ dialects });
  t.teardown(() => poller.close());
  const results = await poller.pollAll(
    [
      ap('no-such-radio', 'openwrt-iw', { interface: 'wlan9' }),
      ap('html', 'openwrt-ubus', { interface: 'garbage' }),
      ap('old-hostapd', 'openwrt-ubus', { interface: 'wlan1' }),
      ap('too-big', 'unifi'),
    ],
    TIMEOUT_MS,
  );
  t.match(results[0], { ok: false, reason: 'bad_output', error: '`iw dev wlan9 station dump` exited with 237: command failed: No such device (-19)' });
  t.match(results[1], { ok: false, reason: 'bad_output', error: /^ubus get_clients: output is not JSON/ });
  t.match(results[2], { ok: false, reason: 'bad_output', error: '2 stations listed, none with a usable signal (dialect openwrt-ubus)' });
  t.match(results[3], { ok: true }, 'within the default bound');

  const small = createPoller({ dialects, maxOutputBytes: 1024 });
  t.teardown(() => small.close());
  const [bounded] = await small.pollAll([ap('too-big', 'unifi')], TIMEOUT_MS);
  t.match(bounded, { ok: false, reason: 'bad_output', error: 'output larger than 1024 bytes' });
});

t.test('a command that prints only an error and exits 0 is reported, not read as an AP with nobody on it', async (t) => {
  const poller = createPoller({ dialects });
  t.teardown(() => poller.close());
  const [silentError, warned] = await poller.pollAll(
    [ap('error-exit-0', 'openwrt-iw', { interface: 'wlan8' }), ap('warned', 'openwrt-iw', { interface: 'wlan7' })],
    TIMEOUT_MS,
  );
  t.match(silentError, { ap: 'error-exit-0', ok: false, reason: 'bad_output', error: '`iw dev wlan8 station dump` printed nothing but an error: command failed: No such device (-19)' });
  t.match(warned, { ap: 'warned', ok: true }, 'a warning beside real output does not fail the poll');
  t.equal(warned?.ok && warned.stations.length, 2);
});

t.test('an interface name that is not a plain name never reaches the AP shell', async (t) => {
  const poller = createPoller({ dialects });
  t.teardown(() => poller.close());
  const before = sshd.log().split('Accepted publickey').length;
  const [result] = await poller.pollAll([ap('evil', 'openwrt-iw', { interface: 'wlan0; reboot' })], TIMEOUT_MS);
  t.match(result, { ok: false, reason: 'config', error: 'interface "wlan0; reboot" is not a plain interface name' });
  t.equal(sshd.log().split('Accepted publickey').length, before, 'no login happened');
});

t.test('a slow AP times out alone, and its connection is dropped', async (t) => {
  const poller = createPoller({ dialects });
  t.teardown(() => poller.close());
  const [slow, fine] = await poller.pollAll([ap('slow', 'openwrt-ubus', { interface: 'slow' }), ap('fine', 'unifi')], TIMEOUT_MS);
  t.match(slow, { ap: 'slow', ok: false, reason: 'timeout', error: `no complete answer within ${TIMEOUT_MS} ms` });
  t.match(fine, { ap: 'fine', ok: true });
});

t.test('an address that accepts TCP but never speaks SSH: timeout, and the socket is closed', async (t) => {
  const sockets: Socket[] = [];
  const closed: Promise<void>[] = [];
  const silent = createServer((socket) => {
    sockets.push(socket);
    // read (and ignore) the client's banner, so its FIN is seen
    socket.resume();
    closed.push(new Promise((resolve) => socket.on('close', () => resolve())));
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', () => resolve()));
  t.teardown(() => new Promise<void>((resolve) => silent.close(() => resolve())));
  const port = (silent.address() as { port: number }).port;
  const poller = createPoller({ dialects });
  t.teardown(() => poller.close());
  const [result] = await poller.pollAll([ap('mute', 'unifi', { port })], 400);
  t.match(result, { ap: 'mute', ok: false, reason: 'timeout' });
  t.equal(sockets.length, 1, 'the poller connected once');
  // the poller's side is destroyed when the poll settles; the test's own timeout bounds a socket left open
  await Promise.all(closed);
  t.equal(sockets.filter((socket) => !socket.destroyed).length, 0, 'the poller closed its socket');
});
