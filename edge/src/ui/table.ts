/**
 * The live terminal table of `simulate`: zone counts against the simulator's ground truth, AP status,
 * the batch, and the running error rate. Pure: a view in, lines out.
 */
import type { ApTickStatus } from '../daemon.js';
import type { ZonePairCount } from '../zones/types.js';

export interface LiveView {
  title: string;
  tick: number;
  ticksPlanned?: number;
  intervalMs: number;
  zones: Array<{ zone: string; counted: number; truth: number; people?: number }>;
  aps: ApTickStatus[];
  transitions: ZonePairCount[];
  /** The ticks `transitions` are summed over. */
  transitionWindowTicks: number;
  tracked: number;
  frozen: number;
  /** `parts`: the batches a tick of more readings than one batch holds went as (1 when absent). */
  batch: { seq: number | null; readings: number; parts?: number; delivery: string; reason?: string };
  destination: string;
  tickMs: number;
  tickErrorRate: number;
  overallErrorRate: number;
  color: boolean;
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

function paint(on: boolean) {
  const wrap = (code: number) => (s: string) => (on ? `\x1b[${code}m${s}\x1b[0m` : s);
  return { bold: wrap(1), dim: wrap(2), red: wrap(31), green: wrap(32), yellow: wrap(33), cyan: wrap(36) };
}

/** The table as lines (no trailing newline on each). */
export function renderLiveTable(view: LiveView): string[] {
  const c = paint(view.color);
  const lines: string[] = [];
  const progress = view.ticksPlanned ? `${view.tick}/${view.ticksPlanned}` : `${view.tick}`;
  lines.push(c.bold(`${view.title} · tick ${progress} · every ${(view.intervalMs / 1000).toFixed(1)} s`) + c.dim(view.ticksPlanned ? '' : ' · Ctrl-C to stop'));
  const width = Math.max(8, ...view.zones.map((z) => z.zone.length));
  const maxCount = Math.max(1, ...view.zones.map((z) => Math.max(z.counted, z.truth)));
  const barWidth = 24;
  lines.push(c.dim(` ${'zone'.padEnd(width)}  counted  truth   diff  people`));
  let counted = 0;
  let truth = 0;
  for (const z of view.zones) {
    counted += z.counted;
    truth += z.truth;
    const diff = z.counted - z.truth;
    const diffText = (diff > 0 ? `+${diff}` : String(diff)).padStart(5);
    const bar = '█'.repeat(Math.round((z.counted / maxCount) * barWidth));
    const people = z.people === undefined ? '     -' : String(z.people).padStart(6);
    lines.push(
      ` ${z.zone.padEnd(width)}  ${String(z.counted).padStart(7)}  ${String(z.truth).padStart(5)}  ${diff === 0 ? c.green(diffText) : c.yellow(diffText)}  ${people}  ${c.cyan(bar)}`,
    );
  }
  lines.push(` ${'total'.padEnd(width)}  ${String(counted).padStart(7)}  ${String(truth).padStart(5)}  ${c.dim(`${view.tracked} tracked, ${view.frozen} frozen`)}`);
  const apCells = view.aps.map((a) => (a.ok ? `${a.ap} ${c.green('✓')}${a.stations}` : `${a.ap} ${c.red('✗')}${a.reason ?? 'down'}`));
  lines.push(...wrapCells(' APs    ', apCells, 100));
  const moves = view.transitions.filter((t) => t.count > 0).map((t) => `${t.from}→${t.to} ${t.count}`);
  const window = `last ${view.transitionWindowTicks} ticks`;
  lines.push(...wrapCells(' moves  ', moves.length > 0 ? [...moves, c.dim(`(${window})`)] : [c.dim(`none in the ${window}`)], 100));
  const delivery =
    view.batch.delivery === 'accepted'
      ? c.green('accepted')
      : view.batch.delivery === 'kept'
        ? 'kept in the ledger'
        : c.red(`${view.batch.delivery}${view.batch.reason ? ` (${view.batch.reason})` : ''}`);
  const parts = (view.batch.parts ?? 1) > 1 ? ` in ${view.batch.parts} batches` : '';
  lines.push(` batch  #${view.batch.seq ?? '-'} · ${view.batch.readings} readings${parts} · ${delivery} · ${view.destination} · tick ${Math.round(view.tickMs)} ms`);
  lines.push(` error  this tick ${pct(view.tickErrorRate)} · overall ${pct(view.overallErrorRate)} ${c.dim('(|counted − truth| / truth)')}`);
  return lines;
}

/** The characters a line shows, colours left out. */
// eslint-disable-next-line no-control-regex
const visible = (s: string) => [...s.replace(/\x1b\[[0-9;]*m/g, '')].length;

function wrapCells(prefix: string, cells: string[], width: number): string[] {
  const out: string[] = [];
  let line = prefix;
  for (const cell of cells) {
    if (visible(line) + visible(cell) + 2 > width && line !== prefix) {
      out.push(line);
      line = ' '.repeat(prefix.length);
    }
    line += `${cell}  `;
  }
  out.push(line.trimEnd());
  return out;
}

/**
 * Redraws a block of lines in place on a terminal `columns()` wide. A line wider than the terminal takes
 * several rows, so the next redraw goes up by rows, not lines, to start where this one did.
 */
export function createLiveRegion(write: (text: string) => void, columns: () => number | undefined = () => undefined) {
  let previous = 0;
  return {
    draw(lines: string[]) {
      const up = previous > 0 ? `\x1b[${previous}A` : '';
      write(`${up}\x1b[0J${lines.join('\n')}\n`);
      const width = columns();
      previous = width ? lines.reduce((rows, line) => rows + Math.max(1, Math.ceil(visible(line) / width)), 0) : lines.length;
    },
  };
}
