/**
 * The first line of an AP's stderr becomes the reason its poll failed, which doctor prints on the
 * installer's terminal: against the real sshd, an AP writing terminal controls (retitle the window,
 * clear the screen) has them shown as U+FFFD, not obeyed.
 */
import t from 'tap';
import { loadDialects } from '../../../edge/src/poll/dialects.js';
import { createPoller } from '../../../edge/src/poll/poller.js';
import type { AccessPoint } from '../../../edge/src/poll/types.js';
import { startSshd } from '../../support/peers/sshd.js';

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

t.test('an AP whose stderr holds terminal controls fails with a printable reason', async (t) => {
  const sshd = await startSshd({
    commands: {
      'iw dev wlan0 station dump': { stderr: '\u001b]0;pwned\u0007\u001b[2Jcommand failed\u009b31m\tbadly\r\nsecond line\n', exitCode: 1 },
      'iw dev wlan1 station dump': { stderr: '\u001b[31mno such device\u001b[0m\n', exitCode: 0 },
    },
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
  const [failed, silent] = await poller.pollAll([ap('failed', 'wlan0'), ap('silent', 'wlan1')], 10_000);
  t.equal(failed?.ok, false);
  t.equal(silent?.ok, false);
  const errors = [failed, silent].map((r) => (r && !r.ok ? r.error : ''));
  for (const error of errors) t.notMatch(error, CONTROL, `no control character in ${JSON.stringify(error)}`);
  t.same(errors, [
    '`iw dev wlan0 station dump` exited with 1: \ufffd]0;pwned\ufffd\ufffd[2Jcommand failed\ufffd31m badly',
    '`iw dev wlan1 station dump` printed nothing but an error: \ufffd[31mno such device\ufffd[0m',
  ]);
});
