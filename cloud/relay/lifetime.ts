/**
 * How long a socket may stay open. Every socket gets the configured maximum plus a random jitter, so a
 * fleet of sockets that connected together (a deploy, a network blip) does not reconnect together.
 */

/** Jitter is at most this share of the lifetime… */
export const JITTER_SHARE = 0.1;
/** …and never more than this. */
export const MAX_JITTER_MS = 60_000;

/** A source of uniform random numbers in [0, 1); injectable so tests pin it. */
export type Random = () => number;

/**
 * The lifetime of one socket: `maxLifetimeMs` plus up to 10 % of it (capped at 60 s).
 *
 * @example
 * socketLifetimeMs(900_000, () => 0.5); // 930_000: 900 s + half of the 60 s cap
 * socketLifetimeMs(10_000, () => 0.5); // 10_500
 */
export function socketLifetimeMs(maxLifetimeMs: number, random: Random = Math.random): number {
  const spread = Math.min(maxLifetimeMs * JITTER_SHARE, MAX_JITTER_MS);
  const r = Math.min(Math.max(random(), 0), 1);
  return Math.round(maxLifetimeMs + spread * r);
}
