/**
 * Bounded concurrency without a dependency: a counting semaphore, a cap per key in front of a shared
 * semaphore, and a map that runs at most `limit` calls at once and reports each item's result or error
 * in input order.
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

  /** No task runs and none waits. */
  get idle(): boolean {
    return this.active === 0 && this.waiting.length === 0;
  }
}

/**
 * At most `perKey` tasks of one key run in, or wait in line for, a shared semaphore at once. A key's
 * other tasks wait in that key's own line, holding no slot and no place in the shared line, so a key
 * whose tasks are slow (pushes to hosts that never answer) takes at most `perKey` of the shared slots
 * and other keys' tasks go ahead. A key's line is dropped once nothing runs or waits in it: lines are
 * kept only for keys with tasks pending.
 *
 * @example
 * const perAccount = new PerKeyLimit(new Semaphore(16), 2);
 * await perAccount.run(recipient.accountName, () => push(recipient));
 */
export class PerKeyLimit {
  private readonly lines = new Map<string, Semaphore>();

  constructor(
    private readonly shared: Semaphore,
    private readonly perKey: number,
  ) {
    if (!Number.isInteger(perKey) || perKey < 1) throw new RangeError(`slots per key must be a positive integer, got ${perKey}`);
  }

  async run<T>(key: string, task: () => Promise<T>): Promise<T> {
    let line = this.lines.get(key);
    if (line === undefined) {
      line = new Semaphore(this.perKey);
      this.lines.set(key, line);
    }
    try {
      return await line.run(() => this.shared.run(task));
    } finally {
      // A freed slot is handed to the key's next task before this runs, so an idle line has nothing left.
      if (line.idle && this.lines.get(key) === line) this.lines.delete(key);
    }
  }

  /** Keys with tasks running or waiting: the lines kept. */
  get keysPending(): number {
    return this.lines.size;
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
