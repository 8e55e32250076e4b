/**
 * The executable's SQLite addon is written to a cache directory and loaded from there; where the loader
 * refuses to map it (a /tmp mounted noexec, the usual default outside the unit), the error names the file
 * and its directory, the likely noexec mount, and how to unpack elsewhere (CACHE_DIRECTORY or TMPDIR),
 * instead of the loader's bare "failed to map segment from shared object". Bytes that are no shared
 * object are not blamed on the mount: unpacking them elsewhere would change nothing. (An addon built for
 * another Node: native-addon-other-node.test.ts.)
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { loadAddonFrom, NativeAddonError } from '../../../edge/src/storage/native-addon.js';
import { REPO } from '../cli/building-config.js';
import { noexecTmpfs } from '../support/private-mount.js';

const ADDON = createRequire(import.meta.url).resolve('better-sqlite3/build/Release/better_sqlite3.node');
const HINT = /may be on a filesystem mounted noexec, as \/tmp often is; unpack it elsewhere: set CACHE_DIRECTORY=\/var\/cache\/lintel-edge .*, or TMPDIR to a directory/;

t.test('bytes that are no shared object: the error names the file and the loader’s words, not a noexec mount', async (t) => {
  const dir = join(t.testdir({}), 'cache');
  mkdirSync(dir, { mode: 0o700 });
  let err: unknown;
  try {
    loadAddonFrom(Buffer.from('not a shared object\n'), dir);
  } catch (thrown) {
    err = thrown;
  }
  if (!(err instanceof NativeAddonError)) throw new Error(`expected a NativeAddonError, got ${String(err)}`);
  t.equal(err.code, 'LINTEL_ADDON_UNLOADABLE');
  const file = readdirSync(dir).find((name) => /^better_sqlite3-[0-9a-f]{16}\.node$/.test(name));
  t.ok(file, 'the file was written under its digest');
  t.match(err.message, `cannot load the SQLite addon unpacked to ${join(dir, file ?? '?')} (${join(dir, file ?? '?')}: `);
  t.match(err.message, '). The executable carries an addon this system cannot load: rebuild it (npm run build:edge)');
  t.notMatch(err.message, /mounted noexec/, 'the mount is not blamed');
  t.notMatch(err.message, HINT, 'nor is unpacking elsewhere offered');
});

t.test('the real addon in a working directory loads, and SQLite runs on it', async (t) => {
  const dir = join(t.testdir({}), 'cache');
  mkdirSync(dir, { mode: 0o700 });
  const nativeBinding = loadAddonFrom(readFileSync(ADDON), dir);
  const db = new Database(':memory:', { nativeBinding } as unknown as Database.Options);
  t.teardown(() => db.close());
  t.match(db.prepare('SELECT sqlite_version() AS v').get(), { v: /^3\.\d+\.\d+$/ });
});

t.test('the real addon on a noexec mount: the loader’s refusal, explained', async (t) => {
  const dir = t.testdir({ tmp: {} });
  const tmp = join(dir, 'tmp');
  const script = join(dir, 'load.ts');
  writeFileSync(
    script,
    `import { readFileSync } from 'node:fs';
import { loadAddonFrom } from ${JSON.stringify(join(REPO, 'edge/src/storage/native-addon.ts'))};
try {
  loadAddonFrom(readFileSync(${JSON.stringify(ADDON)}), process.argv[2]);
  process.stdout.write('loaded\\n');
} catch (err) {
  process.stdout.write(JSON.stringify({ code: err.code, message: err.message }) + '\\n');
}
`,
  );
  const [command, ...args] = [...noexecTmpfs(tmp), '/usr/bin/env', '-u', 'NODE_OPTIONS', process.execPath, '--import', 'tsx', script, tmp];
  const child = spawn(command, args, { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  t.equal(code, 0, `the loading script ran (stderr: ${stderr.slice(0, 500)})`);
  const outcome = JSON.parse(stdout.trim()) as { code?: string; message: string };
  t.equal(outcome.code, 'LINTEL_ADDON_UNLOADABLE');
  t.match(outcome.message, new RegExp(`^cannot load the SQLite addon unpacked to ${tmp}/better_sqlite3-[0-9a-f]{16}\\.node \\(.*failed to map segment from shared object\\)\\. ${tmp} may be on a filesystem mounted noexec`));
  t.match(outcome.message, HINT);
});
