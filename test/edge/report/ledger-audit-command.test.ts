/**
 * `lintel-edge ledger audit` over a real ledger file: a batch that carried a device's address, in a
 * spelling other than colon-separated hex, fails the audit (exit 1) without the report printing it.
 */
import t from 'tap';
import { join } from 'node:path';
import { main } from '../../../edge/src/commands/main.js';
import { openLedger } from '../../../edge/src/report/ledger.js';
import { captureIo, spellings } from '../support/cli-io.js';

const ts = 1795374254000;
const body = (roomId: string) =>
  JSON.stringify({ batchId: 'hq@2026-11-22T19:04:14.000Z', readings: [{ type: 'apClients', buildingId: 'hq', roomId, timestamp: ts, apClients: 4 }] });

t.test('ledger audit fails a ledger holding a decimal MAC or an IP address, and passes a clean one', async (t) => {
  const dir = t.testdir({});
  const decimalMac = spellings('3c:22:fb:01:02:03').find((s) => /^\d+(\.\d+){5}$/.test(s))!;
  for (const [name, roomIds] of [
    ['clean', ['lobby-1', 'cafe-1']],
    ['decimal-mac', ['lobby-1', decimalMac]],
    ['ip', ['10.20.0.11']],
  ] as const) {
    const path = join(dir, `${name}.sqlite`);
    const ledger = openLedger(path);
    roomIds.forEach((roomId, i) => ledger.append(body(roomId), ts + i));
    ledger.close();
    const { out, io } = captureIo();
    const code = await main(['ledger', 'audit', '--ledger', path], io);
    const text = out.join('');
    if (name === 'clean') {
      t.equal(code, 0, text);
      t.match(text, /^audit passed: 2 entries, 2 readings/);
      continue;
    }
    t.equal(code, 1, `${name}: ${text}`);
    t.match(text, /readings\[0\]\.roomId: identifier: value .* looks like/);
    t.match(text, /audit FAILED: 1 finding/);
    for (const roomId of roomIds.slice(-1)) t.notOk(text.includes(roomId), `${name}: the report does not print it`);
  }
});
