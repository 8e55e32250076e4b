/**
 * Coalesces concurrent lookups by key into batched fetches, so N concurrent callers cost a few round
 * trips instead of N. No timer and no waiting window: a lookup is dispatched at once while fewer than
 * `maxInFlight` batches are running; lookups arriving meanwhile queue and leave together, as one batch,
 * the moment a running batch finishes. A lookup is always answered by a fetch that started after it
 * arrived, so it sees every write committed before the call, exactly as a query of its own would.
 */

export interface BatchedLookupOptions {
  /** Batches running at once (each holds one database connection). */
  maxInFlight: number;
  /** Keys per batch at most. */
  maxBatch: number;
}

interface Waiter<V> {
  resolve(value: V): void;
  reject(error: unknown): void;
}

export class BatchedLookup<V> {
  private readonly fetch: (keys: string[]) => Promise<Map<string, V>>;
  private readonly missing: () => V;
  private readonly options: BatchedLookupOptions;
  private readonly waiting = new Map<string, Waiter<V>[]>();
  private inFlight = 0;

  /**
   * @param fetch answers a batch of distinct keys; a key absent from its map gets `missing()`.
   * @example
   * const lookup = new BatchedLookup((ids) => store.membershipsOfMany(ids), () => [], { maxInFlight: 4, maxBatch: 128 });
   * await lookup.load(accountId);
   */
  constructor(fetch: (keys: string[]) => Promise<Map<string, V>>, missing: () => V, options: BatchedLookupOptions) {
    this.fetch = fetch;
    this.missing = missing;
    this.options = options;
  }

  load(key: string): Promise<V> {
    return new Promise<V>((resolve, reject) => {
      const waiters = this.waiting.get(key);
      if (waiters) waiters.push({ resolve, reject });
      else this.waiting.set(key, [{ resolve, reject }]);
      this.dispatch();
    });
  }

  private dispatch(): void {
    while (this.inFlight < this.options.maxInFlight && this.waiting.size > 0) {
      const batch = new Map<string, Waiter<V>[]>();
      for (const [key, waiters] of this.waiting) {
        if (batch.size >= this.options.maxBatch) break;
        batch.set(key, waiters);
      }
      for (const key of batch.keys()) this.waiting.delete(key);
      this.inFlight += 1;
      this.fetch([...batch.keys()])
        .then(
          (results) => {
            for (const [key, waiters] of batch) {
              const value = results.get(key);
              for (const waiter of waiters) waiter.resolve(value ?? this.missing());
            }
          },
          (error: unknown) => {
            for (const waiters of batch.values()) for (const waiter of waiters) waiter.reject(error);
          },
        )
        .finally(() => {
          this.inFlight -= 1;
          this.dispatch();
        });
    }
  }
}
