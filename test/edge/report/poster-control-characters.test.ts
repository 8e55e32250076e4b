/**
 * An ingest's error message is shown on the installer's terminal (doctor's report, simulate's table and
 * its last words), so the reason the poster returns holds no control character: an ingest answering
 * `ESC ]0;…BEL` (retitle the window) or `ESC [2J` (clear the screen) has it shown, not obeyed.
 */
import t, { type Test } from 'tap';
import { createBatchPoster } from '../../../edge/src/report/poster.js';
import { printableLine } from '../../../edge/src/ui/printable.js';
import { startScriptedIngest } from './scripted-ingest.js';

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const HOSTILE = '\u001b]0;pwned\u0007\u001b[2Jreadings refused\r\n\u009b31mtry again\u0000';

/** The URL of an ingest stand-in answering every POST /ingest with `status` and `body`. */
async function startAnsweringIngest(t: Test, status: number, body: string, type: string): Promise<string> {
  return (await startScriptedIngest(t, [{ status, body, type }], { every: true })).url;
}

const body = JSON.stringify({ batchId: 'hq@2026-11-22T19:04:14.000Z', readings: [] });

t.test('a JSON error message with terminal controls comes back as a printable reason', async (t) => {
  const url = await startAnsweringIngest(t, 400, JSON.stringify({ type: 'Validation Error', message: HOSTILE }), 'application/json');
  const poster = createBatchPoster({ url, secret: 'shared-key', timeoutMs: 10_000 });
  t.teardown(() => poster.close());
  const outcome = await poster.post(body);
  t.match(outcome, { outcome: 'rejected', status: 400 });
  const reason = outcome.outcome === 'rejected' ? outcome.reason : '';
  t.notMatch(reason, CONTROL, 'no control character left');
  t.equal(reason, '\ufffd]0;pwned\ufffd\ufffd[2Jreadings refused \ufffd31mtry again\ufffd', 'each shown as U+FFFD, the line breaks as one space');
});

t.test('a plain-text error body with terminal controls comes back as a printable reason', async (t) => {
  const url = await startAnsweringIngest(t, 403, HOSTILE, 'text/plain');
  const poster = createBatchPoster({ url, secret: 'shared-key', timeoutMs: 10_000 });
  t.teardown(() => poster.close());
  const outcome = await poster.post(body);
  t.match(outcome, { outcome: 'rejected', status: 403 });
  t.notMatch(outcome.outcome === 'rejected' ? outcome.reason : '', CONTROL, 'no control character left');
});

t.test('printableLine keeps printable text as it is, and gives one line', async (t) => {
  t.equal(printableLine('  1 of 1 readings are invalid; nothing was stored  '), '1 of 1 readings are invalid; nothing was stored');
  t.equal(printableLine('pièce – salle\tB\n2'), 'pièce – salle B 2', 'non-ASCII text is kept; tabs and line breaks become spaces');
  t.equal(printableLine('\u007f\u0085\u009f'), '\ufffd\ufffd\ufffd', 'DEL and the C1 controls are replaced too');
});
