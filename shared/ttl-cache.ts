/**
 * A small in-process cache with a time-to-live per entry and an injectable clock.
 */

/** Milliseconds since the epoch; injectable so tests move time by hand. */
export type Clock = () => number;

export const systemClock: Clock = () => Date.now();

/**
 * Entries expire `ttlMs` after they are set. The oldest entry is evicted past `maxEntries`.
 *
 * @example
 * const cache = new TtlCache<string[]>(60_000);
 * cache.set('b1', ['acme']);
 * cache.get('b1'); // ['acme'] for the next 60 s, then undefined
 */
export class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; expiresAt: number }>();
  constructor(
    private readonly ttlMs: number,
    private readonly clock: Clock = systemClock,
    private readonly maxEntries = 10_000,
  ) {}

  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= this.clock()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  set(key: string, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, { value, expiresAt: this.clock() + this.ttlMs });
    if (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}
