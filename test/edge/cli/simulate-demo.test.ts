/**
 * The demo (`npm run demo`, i.e. `simulate` with its defaults) shows people moving between zones within
 * its first ticks: the live table's moves line fills in, counted over a window of ticks.
 */
import t from 'tap';
import { simulate, TRANSITION_WINDOW_TICKS } from '../../../edge/src/commands/simulate.js';

// Ticks 600 ms apart give each AP poll 480 ms (80 %): enough for an SSH poll on a busy 2-core machine,
// where a timed-out AP would freeze its devices and hide their moves from the comparison.

function captureIo() {
  const out: string[] = [];
  return { out, io: { out: (s: string) => void out.push(s), err: () => {}, isTty: false } };
}

/** The moves line of each table drawn, in order. */
function movesLines(out: string[]): string[] {
  return out.flatMap((frame) => frame.split('\n').filter((l) => l.startsWith(' moves')));
}

t.test('the default demo shows moves within its first 10 ticks', async (t) => {
  const { out, io } = captureIo();
  const { exitCode, summary } = await simulate({ intervalMs: 600, ticks: 10, output: 'table' }, io);
  t.equal(exitCode, 0);
  t.equal(summary.ticks, 10);
  const moves = movesLines(out);
  t.equal(moves.length, 10, 'one table per tick');
  const firstMove = moves.findIndex((l) => /zone-\w→zone-\w \d+/.test(l));
  t.ok(firstMove >= 0, `a move shows by tick ${firstMove + 1}`);
  t.match(moves[firstMove] ?? '', new RegExp(`\\(last ${TRANSITION_WINDOW_TICKS} ticks\\)$`));
  t.match(moves[0], new RegExp(`^ moves {2}(none in the last ${TRANSITION_WINDOW_TICKS} ticks|.*\\(last ${TRANSITION_WINDOW_TICKS} ticks\\))$`));
});

t.test('at the realistic pace people mostly stay put at first', async (t) => {
  const { out, io } = captureIo();
  await simulate({ intervalMs: 600, ticks: 10, output: 'table', pace: 'realistic' }, io);
  const lively = captureIo();
  await simulate({ intervalMs: 600, ticks: 10, output: 'table' }, lively.io);
  const movedBy = (lines: string[]) => lines.reduce((n, l) => n + [...l.matchAll(/→zone-\w (\d+)/g)].reduce((a, m) => a + Number(m[1]), 0), 0);
  const realisticMoves = movedBy(movesLines(out).slice(-1));
  const livelyMoves = movedBy(movesLines(lively.out).slice(-1));
  t.ok(livelyMoves > realisticMoves, `moves in the window after 10 ticks: lively ${livelyMoves}, realistic ${realisticMoves}`);
});
