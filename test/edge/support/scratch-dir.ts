/**
 * Scratch directories in a chosen parent, removed at teardown, and a TMPDIR of a test's own. The tests that play the systemd unit
 * ($STATE_DIRECTORY set) need a stateDir outside /tmp and /var/tmp, which the collector refuses under the
 * unit (PrivateTmp=yes empties them at every stop), wherever the checkout is: a fresh clone in /tmp puts
 * every t.testdir() there. {@link OUTSIDE_TMP} is such a parent (the tests run as root).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/** A parent directory outside /tmp and /var/tmp, on every Debian machine. */
export const OUTSIDE_TMP = '/var/lib';

/** A fresh directory in `parent`, removed at teardown. */
export function scratchIn(t: { teardown(fn: () => unknown): void }, parent: string): string {
  const dir = mkdtempSync(join(parent, 'lintel-run-state-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * A TMPDIR of the test's own (os.tmpdir() reads it on every call), restored at teardown: other tests'
 * simulations come and go in the shared one.
 */
export function ownTmpdir(t: { testdir(files: Record<string, never>): string; teardown(fn: () => unknown): void }): string {
  const shared = process.env.TMPDIR;
  const dir = t.testdir({});
  process.env.TMPDIR = dir;
  t.teardown(() => {
    if (shared === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = shared;
  });
  return dir;
}
