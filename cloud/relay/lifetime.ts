/**
 * How long a socket may stay open. SOCKET_MAX_LIFETIME_SECS is the most any socket stays (seed 000:
 * "Seconds a socket may stay open before it is dropped"); each socket is dropped up to a random share
 * earlier, so a fleet of sockets that connected together (a deploy, a network blip) does not reconnect
 * together. The claims a socket's domain rooms come from are never older than the configured maximum:
 * app.ts counts the lifetime from the opening of the connection that carried them, not from the join.
 */

/** The spread is at most this share of the lifetime… */
export const JITTER_SHARE = 0.1;
/** …and never more than this. */
export const MAX_JITTER_MS = 60_000;

/** A source of uniform random numbers in [0, 1); injectable so tests pin it. */
export type Random = () => number;

/**
 * The lifetime of one socket: `maxLifetimeMs` less up to 10 % of it (at most 60 s less), never more.
 *
 * @example
 * socketLifetimeMs(900_000, () => 0.5); // 870_000: 900 s less half of the 60 s cap
 * socketLifetimeMs(10_000, () => 0.5); // 9_500
 */
export function socketLifetimeMs(maxLifetimeMs: number, random: Random = Math.random): number {
  const spread = Math.min(maxLifetimeMs * JITTER_SHARE, MAX_JITTER_MS);
  const r = Math.min(Math.max(random(), 0), 1);
  return Math.round(maxLifetimeMs - spread * r);
}
