/**
 * Why a SQLite file cannot be opened, as an operator can act on it: SQLite says SQLITE_CANTOPEN alike
 * for a missing file and one this user may not read, and opens a file it may not write read-only,
 * failing only at the first write. Files another user made (root's `sudo lintel-edge …`) are named
 * with their owner and mode; the refusal to open one for writing is in
 * test/edge/cli/run-unreadable-state.test.ts.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { openLedger } from '../../../edge/src/report/ledger.js';
import { openDatabase, StorageError } from '../../../edge/src/storage/sqlite.js';
import { CLI, REPO } from '../cli/building-config.js';

const NOBODY = 65534;

/** `lintel-edge <args>` run to the end as another user (the tests run as root). */
async function runAs(uid: number, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], { cwd: REPO, uid, gid: uid, env: { ...process.env, HOME: '/nonexistent' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  return { code, stdout, stderr };
}

t.test('a missing file that must exist: no such database file', async (t) => {
  const path = join(t.testdir({}), 'ledger.sqlite');
  t.throws(() => openDatabase(path, [], { readonly: true }), new StorageError(`cannot open ${path}: no such database file`, 'SQLITE_CANTOPEN'));
  t.notOk(existsSync(path), 'and none was made');
});

t.test('a ledger this user may not read: permission denied, naming its owner and mode (not “no such file”)', async (t) => {
  const dir = t.testdir({});
  const path = join(dir, 'ledger.sqlite');
  const ledger = openLedger(path);
  ledger.append('{"batchId":"b","readings":[]}', Date.now());
  ledger.close();
  chmodSync(path, 0o600);
  const { code, stderr } = await runAs(NOBODY, ['ledger', 'verify', '--ledger', path]);
  t.equal(code, 2);
  t.match(stderr, /permission denied: it is owned by root \(uid 0\), mode 600; this process runs as nobody \(uid 65534\) \(run as the file's owner, or chown it to the service user\)/);
  t.notMatch(stderr, /no such database file/);
});
