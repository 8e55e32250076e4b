/**
 * Two OpenWrt APs behind the real sshd, on interfaces wlan0 and wlan1, each answering `iw` as given,
 * polled once together. For the tests of what one AP's answer does to its own poll, and not to the
 * other's: `pollStderrAps` names them `failed` (wlan0) and `silent` (wlan1), for an `iw` that writes
 * only to stderr.
 */
import type { Test } from 'tap';
import { loadDialects } from '../../../../edge/src/poll/dialects.js';
import { createPoller } from '../../../../edge/src/poll/poller.js';
import type { AccessPoint, ApPollResult } from '../../../../edge/src/poll/types.js';
import { startSshd, type SshdRecording } from '../../../support/peers/sshd.js';

interface StderrAnswer {
  stderr: string;
  exitCode: number;
}

/** Polls an AP named `names[0]` answering `answers.wlan0` and one named `names[1]` answering `answers.wlan1`. */
export async function pollTwoOpenWrtAps(
  t: Test,
  answers: { wlan0: SshdRecording; wlan1: SshdRecording },
  names: readonly [string, string],
): Promise<Array<ApPollResult | undefined>> {
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
  return poller.pollAll([ap(names[0], 'wlan0'), ap(names[1], 'wlan1')], 10_000);
}

export function pollStderrAps(t: Test, answers: { wlan0: StderrAnswer; wlan1: StderrAnswer }): Promise<Array<ApPollResult | undefined>> {
  return pollTwoOpenWrtAps(t, answers, ['failed', 'silent']);
}
