/**
 * The first line of an AP's stderr becomes the reason its poll failed, which doctor prints on the
 * installer's terminal: against the real sshd, an AP writing terminal controls (retitle the window,
 * clear the screen) has them shown as U+FFFD, not obeyed.
 */
import t from 'tap';
import { pollStderrAps } from './support/stderr-aps.js';

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

t.test('an AP whose stderr holds terminal controls fails with a printable reason', async (t) => {
  const [failed, silent] = await pollStderrAps(t, {
    wlan0: { stderr: '\u001b]0;pwned\u0007\u001b[2Jcommand failed\u009b31m\tbadly\r\nsecond line\n', exitCode: 1 },
    wlan1: { stderr: '\u001b[31mno such device\u001b[0m\n', exitCode: 0 },
  });
  t.equal(failed?.ok, false);
  t.equal(silent?.ok, false);
  const errors = [failed, silent].map((r) => (r && !r.ok ? r.error : ''));
  for (const error of errors) t.notMatch(error, CONTROL, `no control character in ${JSON.stringify(error)}`);
  t.same(errors, [
    '`iw dev wlan0 station dump` exited with 1: \ufffd]0;pwned\ufffd\ufffd[2Jcommand failed\ufffd31m badly',
    '`iw dev wlan1 station dump` printed nothing but an error: \ufffd[31mno such device\ufffd[0m',
  ]);
});
