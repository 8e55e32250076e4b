/**
 * created_at is not part of the hash chain, so a ledger file can hold one that is no time at all (edited,
 * or written by another tool). export still prints every entry, giving that value as stored, instead of
 * stopping at it.
 */
import t from 'tap';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { main } from '../../../edge/src/commands/main.js';
import { openLedger } from '../../../edge/src/report/ledger.js';
import { captureIo } from '../support/cli-io.js';

const ts = 1795374254000;
const body = (roomId: string) =>
  JSON.stringify({ batchId: 'hq@2026-11-22T19:04:14.000Z', readings: [{ type: 'apClients', buildingId: 'hq', roomId, timestamp: ts, apClients: 4 }] });

t.test('export prints entries whose created_at is out of range or not a number', async (t) => {
  const path = join(t.testdir({}), 'ledger.sqlite');
  const ledger = openLedger(path);
  ['lobby-1', 'cafe-1', 'lobby-2'].forEach((roomId, i) => ledger.append(body(roomId), ts + i));
  ledger.close();
  const db = new Database(path);
  db.prepare('UPDATE ledger_entries SET created_at = ? WHERE seq = 1').run(1e17);
  db.prepare('UPDATE ledger_entries SET created_at = ? WHERE seq = 2').run('yesterday');
  db.close();

  const { out, err, io } = captureIo();
  const code = await main(['ledger', 'export', '--ledger', path], io);
  t.equal(code, 0, err.join(''));
  const lines = out.join('').trim().split('\n').map((line) => JSON.parse(line) as { seq: number; createdAt: unknown; body: string });
  t.same(
    lines.map((l) => [l.seq, l.createdAt]),
    [
      [1, 1e17],
      [2, 'yesterday'],
      [3, new Date(ts + 2).toISOString()],
    ],
  );
  t.same(lines.map((l) => l.body), ['lobby-1', 'cafe-1', 'lobby-2'].map(body), 'every body, exactly as stored');

  const verify = captureIo();
  t.equal(await main(['ledger', 'verify', '--ledger', path], verify.io), 0, 'created_at is not chained, so the chain is intact');
});
