/**
 * Connection pools for the most recently used origins only. undici 6's Agent keeps a Pool for every
 * origin it ever dispatched to and never removes it (its source calls it "a tiny memory leak"): each one
 * is a queue of 2048 slots, its connector and its TLS session cache, ~20 KiB for the life of the process.
 * A service that reaches origins it does not choose (push endpoints from /subscribe, device endpoints
 * from registered sensors) uses {@link OriginPools} in its place.
 */
import type { Pool } from 'undici';

/**
 * One undici Pool per origin, for the `max` most recently used origins. An evicted pool is closed: its
 * requests in flight finish (each within its own timeout), then its connections close. A request to an
 * evicted origin later gets a new pool and a new connection.
 *
 * @example
 * const pools = new OriginPools(256, (origin) => new Pool(origin, { connect }));
 * await request(url, { dispatcher: pools.poolFor(new URL(url).origin) });
 * // on stop: await pools.destroy();
 */
export class OriginPools {
  /** Oldest use first: a pool is moved to the end on each use. */
  private readonly pools = new Map<string, Pool>();
  private readonly closing = new Set<Pool>();

  constructor(
    private readonly max: number,
    private readonly create: (origin: string) => Pool,
  ) {}

  /** Pools kept for reuse (evicted pools still closing are not counted). */
  get size(): number {
    return this.pools.size;
  }

  /** The pool of `origin`, made the most recently used. Dispatch to it at once, before anything is awaited. */
  poolFor(origin: string): Pool {
    const kept = this.pools.get(origin);
    if (kept) {
      this.pools.delete(origin);
      this.pools.set(origin, kept);
      return kept;
    }
    const pool = this.create(origin);
    this.pools.set(origin, pool);
    for (const [oldest, evicted] of this.pools) {
      if (this.pools.size <= this.max) break;
      this.pools.delete(oldest);
      this.retire(evicted);
    }
    return pool;
  }

  /** Closes every pool: requests in flight finish, then the connections close. */
  async close(): Promise<void> {
    for (const pool of this.pools.values()) this.retire(pool);
    this.pools.clear();
    await Promise.all([...this.closing].map((pool) => pool.close().catch(() => undefined)));
  }

  /** Destroys every pool, evicted ones still closing too: requests in flight are aborted (with `err` when given). */
  async destroy(err: Error | null = null): Promise<void> {
    const all = [...this.pools.values(), ...this.closing];
    this.pools.clear();
    this.closing.clear();
    await Promise.all(all.map((pool) => pool.destroy(err).catch(() => undefined)));
  }

  /** Closes a pool no longer kept, and remembers it until it has closed so that destroy can abort it. */
  private retire(pool: Pool): void {
    this.closing.add(pool);
    void pool
      .close()
      .catch(() => undefined)
      .finally(() => this.closing.delete(pool));
  }
}
