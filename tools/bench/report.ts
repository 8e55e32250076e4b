/**
 * What every benchmark prints with: nearest-rank percentiles and `label: value unit` lines.
 */

/** Nearest-rank percentile of ascending `sorted` values; `fraction` in [0, 1]. NaN when empty. */
export function nearestRank(sorted: ArrayLike<number>, fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1))] ?? Number.NaN;
}

/** Prints one figure as `label: value unit` (no unit: `label: value`). */
export function printLine(label: string, value: string, unit = ''): void {
  console.log(`${label}: ${value}${unit ? ` ${unit}` : ''}`);
}
