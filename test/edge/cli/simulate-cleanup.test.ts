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
  const before = simDirs();
  const out: string[] = [];
  const io = { out: (s: string) => void out.push(s), err: (s: string) => void out.push(s), isTty: false };
  await t.rejects(
    simulate({ intervalMs: 100, output: 'json', ticks: 1 }, io, {
      startBuilding: async () => {
        throw new Error('the building could not start');
      },
    }),
    { message: 'the building could not start' },
  );
  t.same(simDirs(), before, 'no lintel-edge-sim-* directory left behind');
});
