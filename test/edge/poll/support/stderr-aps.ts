/**
 * Two OpenWrt APs behind the real sshd whose `iw` writes only to stderr: `failed` (wlan0) and `silent`
 * (wlan1), polled once. For the tests of the reason a poll fails with, taken from an AP's stderr.
 */
import type { Test } from 'tap';
import { loadDialects } from '../../../../edge/src/poll/dialects.js';
import { createPoller } from '../../../../edge/src/poll/poller.js';
import type { AccessPoint, ApPollResult } from '../../../../edge/src/poll/types.js';
import { startSshd } from '../../../support/peers/sshd.js';

interface StderrAnswer {
  stderr: string;
  exitCode: number;
}

export async function pollStderrAps(t: Test, answers: { wlan0: StderrAnswer; wlan1: StderrAnswer }): Promise<Array<ApPollResult | undefined>> {
  const sshd = await startSshd({
    commands: { 'iw dev wlan0 station dump': answers.wlan0, 'iw dev wlan1 station dump': answers.wlan1 },
  });
  t.teardown(() => sshd.stop());
  const ap = (name: string, iface: string): AccessPoint => ({
    name,
    zone: 'lab',
    dialect: 'openwrt-iw',
    target: { transport: 'ssh', host: sshd.host, port: sshd.port, username: sshd.username, privateKey: sshd.clientPrivateKey, interface: iface },
  });
  const poller = createPoller({ dialects: loadDialects() });
  t.teardown(() => poller.close());
  return poller.pollAll([ap('failed', 'wlan0'), ap('silent', 'wlan1')], 10_000);
}
