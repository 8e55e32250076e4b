/**
 * Bounded concurrency without a dependency: a counting semaphore, a map that runs at most `limit`
 * calls at once and reports each item's result or error in input order, and a bounded wait.
 */

/** A counting semaphore. `run` waits for a slot, runs the task and always frees the slot. */
export class Semaphore {
  private active = 0;
  private readonly waiting: Array<() => void> = [];
  constructor(private readonly slots: number) {
    if (!Number.isInteger(slots) || slots < 1) throw new RangeError(`semaphore slots must be a positive integer, got ${slots}`);
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.active >= this.slots) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.active += 1;
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active -= 1;
    }
  }
}

export type Settled<R> = { ok: true; value: R } | { ok: false; error: unknown } | { ok: false; skipped: true };

/**
 * Calls `fn` for every item with at most `limit` calls in flight. One failure never stops the others.
 * `shouldStart` is asked before each call; when it answers false the remaining items are skipped.
 *
 * @example
 * const results = await mapSettled(endpoints, 8, (e) => push(e));
 * results.filter((r) => !r.ok).length; // how many failed
 */
export async function mapSettled<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
  shouldStart: () => boolean = () => true,
): Promise<Settled<R>[]> {
  const results: Settled<R>[] = new Array<Settled<R>>(items.length);
  let next = 0;
  let stopped = false;
  async function worker(): Promise<void> {
    for (;;) {
      const index = next++;
      if (index >= items.length) return;
      if (stopped || !shouldStart()) {
        stopped = true;
        results[index] = { ok: false, skipped: true };
        continue;
      }
      try {
        results[index] = { ok: true, value: await fn(items[index] as T, index) };
      } catch (error) {
        results[index] = { ok: false, error };
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(Math.max(1, limit), items.length) }, worker));
  return results;
}
