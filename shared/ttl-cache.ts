/**
 * A small in-process cache with a time-to-live per entry and an injectable clock.
 */
import { performance } from 'node:perf_hooks';

/**
 * Milliseconds, injectable so tests move time by hand: since the epoch for {@link systemClock} (for
 * timestamps), from an arbitrary start for {@link monotonicClock} (for measuring how long something lasts).
 */
export type Clock = () => number;

/** The wall clock: what a timestamp is stamped with. NTP or an RTC can step it either way. */
export const systemClock: Clock = () => Date.now();

/** The process's monotonic clock: never stepped, so what it measures lasts as long as it says. */
export const monotonicClock: Clock = () => performance.now();

/**
 * Entries expire `ttlMs` after they are set, on `clock` (by default the monotonic clock). The oldest
 * entry is evicted past `maxEntries`.
 *
 * A caller may pass a wall clock. One stepped back by D would keep every entry D longer (a revoked key
 * trusted for D more), so an entry read on a clock earlier than when it was set is dropped: its age is
 * unknown, and a cache can always ask again.
 *
 * @example
 * const cache = new TtlCache<string[]>(60_000);
 * cache.set('b1', ['acme']);
 * cache.get('b1'); // ['acme'] for the next 60 s, then undefined
 */
export class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; setAt: number; expiresAt: number }>();
  constructor(
    private readonly ttlMs: number,
    private readonly clock: Clock = monotonicClock,
    private readonly maxEntries = 10_000,
  ) {}

  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    const now = this.clock();
    if (entry.expiresAt <= now || now < entry.setAt) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  set(key: string, value: V): void {
    const now = this.clock();
    this.entries.delete(key);
    this.entries.set(key, { value, setAt: now, expiresAt: now + this.ttlMs });
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
