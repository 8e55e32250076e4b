import t from 'tap';
import { join } from 'node:path';
import { applyMigrations, openDatabase, type Migration } from '../../../edge/src/storage/sqlite.js';

const migrations = [{ id: '0001', sql: 'CREATE TABLE things (id INTEGER PRIMARY KEY)' }];

t.test('files open in WAL mode; a durable one syncs every commit, the others only at checkpoints', async (t) => {
  const dir = t.testdir({});
  const plain = openDatabase(join(dir, 'zones.sqlite'), migrations);
  t.teardown(() => plain.close());
  const durable = openDatabase(join(dir, 'ledger.sqlite'), migrations, { durable: true });
  t.teardown(() => durable.close());
  t.equal(plain.pragma('journal_mode', { simple: true }), 'wal');
  t.equal(durable.pragma('journal_mode', { simple: true }), 'wal');
  // SQLite's codes: 1 = NORMAL, 2 = FULL.
  t.equal(plain.pragma('synchronous', { simple: true }), 1);
  t.equal(durable.pragma('synchronous', { simple: true }), 2);
  t.same(durable.prepare('SELECT id FROM schema_migrations').all(), [{ id: '0001' }], 'and migrated like any other');
});

t.test('a migration another connection applied since this one looked is skipped, not run twice', async (t) => {
  const path = join(t.testdir({}), 'ledger.sqlite');
  const steps = [...migrations, { id: '0002', sql: 'CREATE TABLE more (id INTEGER PRIMARY KEY)' }];
  const other = openDatabase(path, []);
  t.teardown(() => other.close());
  const db = openDatabase(path, []);
  t.teardown(() => db.close());
  // The other connection (another process opening the same file) applies the steps after this one read
  // which were done and before it applies them.
  const racing = {
    *[Symbol.iterator]() {
      applyMigrations(other, steps);
      yield* steps;
    },
  } as unknown as Migration[];
  t.same(applyMigrations(db, racing), [], 'nothing left to apply');
  t.same(db.prepare('SELECT id FROM schema_migrations ORDER BY id').all(), [{ id: '0001' }, { id: '0002' }]);
});
