/**
 * The live table on a terminal narrower than its lines: the terminal wraps a long line onto several rows,
 * so each redraw must move the cursor up by the rows the last frame took, not by its lines, or every
 * frame leaves the top of the previous one behind.
 */
import t from 'tap';
import { simulate } from '../../../edge/src/commands/simulate.js';

const COLUMNS = 60;
// eslint-disable-next-line no-control-regex
const visible = (line: string) => [...line.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '')].length;
const rowsOf = (frame: string) => frame.replace(/\n$/, '').split('\n').reduce((n, line) => n + Math.max(1, Math.ceil(visible(line) / COLUMNS)), 0);

t.test('each redraw goes up by the rows the previous frame took on a 60-column terminal', async (t) => {
  const frames: string[] = [];
  const io = { out: (s: string) => void (s.includes('\x1b[0J') && frames.push(s)), err: () => {}, isTty: true, columns: COLUMNS };
  const { exitCode } = await simulate({ intervalMs: 300, ticks: 3, seed: 3, accessPoints: 9, output: 'table' }, io);
  t.equal(exitCode, 0);
  t.equal(frames.length, 3);
  t.ok(frames[0]!.split('\n').some((line) => visible(line) > COLUMNS), 'some line is wider than the terminal');
  for (let i = 1; i < frames.length; i++) {
    // eslint-disable-next-line no-control-regex
    const up = /^\x1b\[(\d+)A/.exec(frames[i]!)?.[1];
    t.equal(Number(up), rowsOf(frames[i - 1]!), `frame ${i + 1} goes up to the top of frame ${i}`);
  }
});
