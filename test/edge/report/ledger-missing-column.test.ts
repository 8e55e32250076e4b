/**
 * A ledger that is a valid SQLite file but lacks a table or column the ledger uses (dropped by hand, or
 * a file a newer version changed before a downgrade) is a damaged file: openLedger refuses it at open,
 * for the collector and for the `ledger` commands alike, with a StorageError whose code says so
 * (SQLITE_CORRUPT, which a start turns into exit 2), naming the file and what it lacks. It once failed
 * with a plain SQLITE_ERROR (exit 1, restarted every 5 s), or, for a column only a prune or a delivery
 * record uses, only then, mid-run. The file is audit evidence: it is left as it is.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openLedger } from '../../../edge/src/report/ledger.js';
import { isUnreadableDatabase, StorageError } from '../../../edge/src/storage/sqlite.js';

/** A ledger of one entry whose checkpoint table lost its `pruned_at` column, which only a prune writes. */
function ledgerWithoutPrunedAt(dir: string): string {
  const path = join(dir, 'ledger.sqlite');
  const ledger = openLedger(path);
  ledger.setDelivery(ledger.append('{"batchId":"hq@1","readings":[]}', Date.UTC(2026, 0, 1)).seq, 'kept');
  ledger.close();
  const db = new Database(path);
  db.exec('ALTER TABLE ledger_checkpoint DROP COLUMN pruned_at');
  db.close();
  return path;
}

const thrownBy = (fn: () => unknown): unknown => {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return undefined;
};

t.test('a ledger lacking a column is refused at open as damaged, naming the file and the column, and left as it is', async (t) => {
  const path = ledgerWithoutPrunedAt(t.testdir({}));
  const before = readFileSync(path);
  for (const readonly of [false, true]) {
    const err = thrownBy(() => openLedger(path, { readonly }));
    t.type(err, StorageError, readonly ? 'read-only, as the ledger commands open it' : 'for writing, as the collector opens it');
    t.match(err, { code: 'SQLITE_CORRUPT', message: `${path} is damaged: table ledger_checkpoint has no column named pruned_at` });
    t.ok(isUnreadableDatabase(err), 'an unreadable file, not one to try again');
  }
  t.same(readFileSync(path), before, 'the file is left as it is');
  const db = new Database(path);
  t.teardown(() => db.close());
  t.same(db.prepare('SELECT seq, delivery FROM ledger_entries').all(), [{ seq: 1, delivery: 'kept' }], 'its entry still there, its delivery as recorded');
});
