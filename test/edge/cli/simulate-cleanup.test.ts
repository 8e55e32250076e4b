/**
 * `simulate` without --state-dir works in a temporary directory, removed at the end whatever the end:
 * here the building fails to start, after the directory was made.
 */
import t from 'tap';
import { readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { simulate } from '../../../edge/src/commands/simulate.js';

const simDirs = () => readdirSync(tmpdir()).filter((name) => name.startsWith('lintel-edge-sim-')).sort();

t.test('a temporary state directory is removed when the run fails', async (t) => {
  // A temporary directory of this test's own (os.tmpdir() reads TMPDIR on every call): other test files
  // run simulations at the same time, and their lintel-edge-sim-* directories come and go in the shared one.
  const sharedTmpdir = process.env.TMPDIR;
  process.env.TMPDIR = t.testdir();
  t.teardown(() => {
    if (sharedTmpdir === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = sharedTmpdir;
  });
  t.same(simDirs(), [], 'nothing else writes to this test directory');
  let duringRun: string[] = [];
  const out: string[] = [];
  const io = { out: (s: string) => void out.push(s), err: (s: string) => void out.push(s), isTty: false };
  await t.rejects(
    simulate({ intervalMs: 100, output: 'json', ticks: 1 }, io, {
      startBuilding: async () => {
        duringRun = simDirs();
        throw new Error('the building could not start');
      },
    }),
    { message: 'the building could not start' },
  );
  t.equal(duringRun.length, 1, 'the run made its lintel-edge-sim-* directory before the building failed');
  t.same(simDirs(), [], 'no lintel-edge-sim-* directory left behind');
});
