/**
 * What every benchmark prints with: nearest-rank percentiles and `label: value unit` lines.
 */

/** Nearest-rank percentile of ascending `sorted` values; `fraction` in [0, 1]. NaN when empty. */
export function nearestRank(sorted: ArrayLike<number>, fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1))] ?? Number.NaN;
}

const NUMBER = /^-?\d+(?:\.\d+)?(?:e[+-]?\d+)?$/i;

/**
 * Prints one figure as `label: value unit` (no unit: `label: value`), one per line, on stdout. A colon
 * in the label is dropped, so the first `: ` always ends it. A value that is not a number (a name, an
 * unavailable figure) is not a figure: it goes to stderr as a `#` note.
 */
export function printLine(label: string, value: string, unit = ''): void {
  const name = label.replace(/:\s*/g, ' ');
  if (!NUMBER.test(value)) {
    console.error(`# ${name}: ${value}${unit ? ` ${unit}` : ''}`);
    return;
  }
  console.log(`${name}: ${value}${unit ? ` ${unit}` : ''}`);
}

/** A note about the run, not a figure: on stderr, as `# text`. */
export function printNote(text: string): void {
  console.error(`# ${text}`);
}
