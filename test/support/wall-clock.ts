/**
 * This process's wall clock (Date.now), stepped by hand the way NTP or an RTC steps a real one, for the
 * rest of the test: the monotonic clock (performance.now, and with it every timer) runs on untouched.
 * Only Date.now moves; the real one is put back at teardown.
 */
export interface SteppableWallClock {
  /** Moves the wall clock by `byMs` (negative: back); steps add up. */
  step(byMs: number): void;
  /** Puts the wall clock back on true time, as NTP does to a clock that ran ahead. */
  reset(): void;
}

/**
 * @example
 * const wallClock = steppableWallClock(t);
 * wallClock.step(80 * YEAR_MS); // booted with its RTC in 2106
 * wallClock.reset(); // then NTP set it
 */
export function steppableWallClock(t: { teardown(fn: () => unknown): void }): SteppableWallClock {
  const realNow = Date.now.bind(Date);
  const original = Object.getOwnPropertyDescriptor(Date, 'now');
  let offsetMs = 0;
  Date.now = () => realNow() + offsetMs;
  t.teardown(() => {
    if (original) Object.defineProperty(Date, 'now', original);
  });
  return {
    step: (byMs) => void (offsetMs += byMs),
    reset: () => void (offsetMs = 0),
  };
}
