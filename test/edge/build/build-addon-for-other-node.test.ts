/**
 * The build carries better-sqlite3's addon into a copy of the Node that runs it; an addon built for
 * another Node (node_modules kept across a Node upgrade) would make an executable that cannot open its
 * state. The build loads the addon first and stops, before bundling, naming `npm rebuild better-sqlite3`.
 *
 * The stale addon is put in the real one's place, and dist/ hidden under an empty tmpfs, in a mount
 * namespace of the build alone: the repository, and the executable other tests use, stay as they are.
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { buildStaleAddon, STALE_MODULE_VERSION } from '../support/stale-addon.js';

const REPO = new URL('../../../', import.meta.url).pathname;
const ADDON = createRequire(import.meta.url).resolve('better-sqlite3/build/Release/better_sqlite3.node');

/** Runs the build with `stale` over the real addon and a private, empty dist/; resolves with its exit code and stderr. */
function buildWithAddon(stale: string): Promise<{ code: number | null; stderr: string }> {
  const dist = join(REPO, 'dist');
  mkdirSync(dist, { recursive: true });
  const setup = 'set -e; mount -t tmpfs -o mode=755 tmpfs "$1"; mount --bind "$2" "$3"; shift 3; exec "$@"';
  const argv = ['--mount', '--propagation', 'private', '--', 'sh', '-c', setup, 'sh', dist, stale, ADDON, '/usr/bin/env', '-u', 'NODE_OPTIONS', process.execPath, join(REPO, 'edge/build/build.mjs')];
  return new Promise((resolve) => {
    execFile('unshare', argv, { cwd: REPO, timeout: 150_000 }, (err, _stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: unknown }).code as number | null) : 0, stderr });
    });
  });
}

t.test('an addon built for another Node stops the build before bundling, naming npm rebuild', async (t) => {
  t.equal(process.geteuid?.(), 0, 'root, to mount in a namespace of the build alone');
  const stale = buildStaleAddon(t.testdir({}));
  const { code, stderr } = await buildWithAddon(stale);
  t.equal(code, 1, `the build fails (stderr: ${stderr.slice(0, 800)})`);
  t.match(
    stderr,
    new RegExp(
      `build-edge: failed: better-sqlite3's addon \\(node_modules/better-sqlite3/build/Release/better_sqlite3\\.node\\) does not load into this Node ${process.version.replace(/\./g, '\\.')} ` +
        `\\(NODE_MODULE_VERSION ${process.versions.modules}\\): The module '.*' was compiled against a different Node\\.js version using NODE_MODULE_VERSION ${STALE_MODULE_VERSION}\\..*; ` +
        `run npm rebuild better-sqlite3, then build again\\n`,
    ),
  );
  t.notMatch(stderr, /bundling/, 'nothing was bundled');
});
