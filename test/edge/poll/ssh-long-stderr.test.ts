/**
 * An AP's stderr becomes the reason its poll failed, MACs blanked. A long first line, against the real
 * sshd, must cost no more than a short one: scrubbing all of it first took quadratic time on a run of hex
 * letters (a megabyte: many minutes, tap's timeout), freezing the collector for every AP.
 */
import t from 'tap';
import { scrubMacsShort } from '../../../edge/src/poll/mac.js';
import { pollStderrAps } from './support/stderr-aps.js';

t.test('an AP that writes a long line of hex letters to stderr fails with a short reason', async (t) => {
  const [failed, silent] = await pollStderrAps(t, {
    wlan0: { stderr: `command failed: ${'abcdef'.repeat(150_000)}\n`, exitCode: 1 },
    wlan1: { stderr: `${'fade'.repeat(200_000)}\nsecond line\n`, exitCode: 0 },
  });
  t.match(failed, { ok: false, reason: 'bad_output', error: '`iw dev wlan0 station dump` exited with 1: command failed: …' });
  t.match(silent, { ok: false, reason: 'bad_output', error: '`iw dev wlan1 station dump` printed nothing but an error: …' }, 'a line that is all hex is not shown, and still counts as an error');
});

t.test('the reason is cut where no MAC can straddle the cut, so no part of one shows', async (t) => {
  const macs = '3c:22:fb:01:02:03 '.repeat(30);
  t.equal(scrubMacsShort(`error: stations ${macs}`, 200), 'error: stations …', 'the MAC cut at the end of the scanned head is dropped with its neighbours');
  t.equal(scrubMacsShort(`station 3c:22:fb:01:02:03 gone; ${'x'.repeat(5000)}`, 40), `station <mac> gone; ${'x'.repeat(20)}`, 'at most the length asked for');
  t.equal(scrubMacsShort('station 3C-22-FB-01-02-03 gone', 200), 'station <mac> gone', 'a short text is scrubbed whole');
});
