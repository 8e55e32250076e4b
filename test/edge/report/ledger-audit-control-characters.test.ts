/**
 * `ledger audit` prints where it found each problem, and a body's keys are whatever was written to the
 * ledger file. A key made of terminal commands was printed as it was: `ESC [8m` hid the lines after it,
 * "audit FAILED" included, and U+009B (C1 CSI, one byte for `ESC [`) passes JSON.stringify unescaped.
 * Every path is now quoted with its control characters escaped, and every line printed is printable.
 */
import t from 'tap';
import { join } from 'node:path';
import { CONTROL_CHARACTERS } from '../../../shared/kinds.js';
import { main } from '../../../edge/src/commands/main.js';
import { auditBody } from '../../../edge/src/report/audit.js';
import { openLedger } from '../../../edge/src/report/ledger.js';
import { captureIo } from '../support/cli-io.js';

const ts = 1795374254000;
const reading = { type: 'apClients', buildingId: 'hq', roomId: 'lobby-1', timestamp: ts, apClients: 4 };

/** Bodies whose keys (at the top, in a reading, and one that looks like a MAC) hold ESC and U+009B. */
const BODIES = [
  JSON.stringify({ batchId: 'x', readings: [], '\u001b[8m': 0 }),
  JSON.stringify({ batchId: 'x', readings: [{ ...reading, '\u009b8m': 1 }] }),
  JSON.stringify({ batchId: 'x', readings: [], '\u001b]0;pwned\u0007': 0, '\u001b[3c:22:fb:01:02:03': 0, '\u2028\u007f': 0 }),
];

const NOT_A_NEWLINE_CONTROL = new RegExp(`(?!\\n)${CONTROL_CHARACTERS.source}`);

t.test('findings name keys holding control characters without printing them', async (t) => {
  const path = join(t.testdir({}), 'ledger.sqlite');
  const ledger = openLedger(path);
  BODIES.forEach((body, i) => ledger.append(body, ts + i));
  ledger.close();

  const { out, io } = captureIo();
  const code = await main(['ledger', 'audit', '--ledger', path], io);
  const text = out.join('');
  const controls = [...text].filter((c) => NOT_A_NEWLINE_CONTROL.test(c)).map((c) => `U+${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  t.same(controls, [], 'the report holds no control character but line ends');
  // Shown in a failure's diagnostics, such a report would garble this test's own output, as the auditor's.
  if (controls.length > 0) return;
  t.equal(code, 1, text);
  t.match(text, /^seq 1 "\\u001b\[8m": unexpected-key: a batch holds only batchId and readings$/m, 'ESC shown as its JSON escape');
  t.match(text, /^seq 2 readings\[0\]\."\\u009b8m": unexpected-key: not a declared field of apClients$/m, 'U+009B shown escaped, though JSON.stringify leaves it');
  t.match(text, /^seq 3 "\\u001b\]0;pwned\\u0007": unexpected-key/m);
  t.match(text, /^seq 3 "\\u2028\\u007f": unexpected-key/m);
  t.notOk(text.includes('3c:22:fb:01:02:03'), 'a key that looks like a MAC is still masked');
  t.match(text, /^audit FAILED: \d+ findings in 3 entries of /m, 'and the verdict is there to be read');
});

t.test('auditBody itself gives paths without control characters, for any caller', async (t) => {
  for (const body of BODIES) {
    for (const finding of auditBody(body)) {
      t.notOk(CONTROL_CHARACTERS.test(finding.path), `${finding.kind} finding: its path`);
      t.notOk(CONTROL_CHARACTERS.test(finding.detail), `${finding.kind} finding: its detail`);
    }
  }
});
