/**
 * Keeps work still running: the sends, so a stopping service lets them store their exchange before it
 * closes the database, and the requests still owed an answer, so it closes no connection under one.
 */
export class InFlight {
  private readonly running = new Set<Promise<unknown>>();

  /** Tracks a piece of work until it settles. */
  track<T>(work: Promise<T>): Promise<T> {
    this.running.add(work);
    const forget = () => this.running.delete(work);
    work.then(forget, forget);
    return work;
  }

  get size(): number {
    return this.running.size;
  }

  /** Resolves when every tracked piece of work has settled, or after `timeoutMs`, whichever is first. */
  async drain(timeoutMs: number): Promise<boolean> {
    if (this.running.size === 0) return true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    const settled = Promise.allSettled([...this.running]).then(() => true as const);
    try {
      return await Promise.race([settled, timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }
}
