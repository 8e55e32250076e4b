/**
 * The simulate command's live table: zone counts against the truth, and the moves over the transition
 * window, which the table names so a viewer knows what the counts cover.
 */
import t from 'tap';
import { renderLiveTable, type LiveView } from '../../../edge/src/ui/table.js';

const view: LiveView = {
  title: 'Lintel edge · simulated building',
  tick: 9,
  ticksPlanned: 20,
  intervalMs: 1000,
  zones: [
    { zone: 'zone-a', counted: 12, truth: 11, people: 8 },
    { zone: 'zone-b', counted: 17, truth: 19, people: 12 },
  ],
  aps: [
    { ap: 'ap-zone-a-1', ok: true, stations: 33, durationMs: 12 },
    { ap: 'ap-zone-b-1', ok: false, stations: 0, durationMs: 500, reason: 'timeout' },
  ],
  transitions: [
    { from: 'zone-a', to: 'zone-b', count: 7 },
    { from: 'zone-b', to: 'zone-a', count: 0 },
  ],
  transitionWindowTicks: 30,
  tracked: 29,
  frozen: 2,
  batch: { seq: 9, readings: 16, delivery: 'kept' },
  destination: 'no --ingest given',
  tickMs: 140,
  tickErrorRate: 0.1,
  overallErrorRate: 0.064,
  color: false,
};

const line = (lines: string[], prefix: string) => lines.find((l) => l.startsWith(prefix)) ?? '';

t.test('moves in the window are listed with the window they cover; a pair that fell to 0 is not', async (t) => {
  const lines = renderLiveTable(view);
  t.equal(line(lines, ' moves'), ' moves  zone-a→zone-b 7  (last 30 ticks)');
  t.match(lines[0], /tick 9\/20 · every 1\.0 s/);
  t.match(line(lines, ' zone-a'), /^ zone-a +12 +11 +\+1 +8 +█+$/);
  t.match(line(lines, ' total'), /^ total +29 +30 +29 tracked, 2 frozen$/);
  t.match(line(lines, ' APs'), /ap-zone-a-1 ✓33 {2}ap-zone-b-1 ✗timeout/);
});

t.test('with no moves, the table says so for the window', async (t) => {
  const lines = renderLiveTable({ ...view, transitions: [{ from: 'zone-a', to: 'zone-b', count: 0 }], transitionWindowTicks: 12 });
  t.equal(line(lines, ' moves'), ' moves  none in the last 12 ticks');
});

t.test('the batch line says how many batches a tick too large for one went as', async (t) => {
  t.equal(line(renderLiveTable(view), ' batch'), ' batch  #9 · 16 readings · kept in the ledger · no --ingest given · tick 140 ms');
  const split = renderLiveTable({ ...view, batch: { seq: 12, readings: 7800, parts: 2, delivery: 'accepted' } });
  t.equal(line(split, ' batch'), ' batch  #12 · 7800 readings in 2 batches · accepted · no --ingest given · tick 140 ms');
});
