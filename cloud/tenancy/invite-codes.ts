/**
 * Invite code generation: 128 bits from the operating system's CSPRNG, as 32 lowercase hex characters.
 */
import { randomBytes } from 'node:crypto';

export const INVITE_CODE = /^[0-9a-f]{32}$/;
export const DEFAULT_INVITE_LIFETIME_HOURS = 7 * 24;

/** A fresh invite code. */
export function newInviteCode(): string {
  return randomBytes(16).toString('hex');
}

/**
 * How long a code lives, in whole milliseconds (the precision its expiry is kept to). The expiry itself
 * is set by PostgreSQL from its own clock, the one redemption checks it against, so a skew between the
 * hosts' clocks neither shortens nor lengthens a code's life.
 *
 * @example
 * inviteLifetimeMs(1.5); // 5400000
 */
export function inviteLifetimeMs(lifetimeHours: number = DEFAULT_INVITE_LIFETIME_HOURS): number {
  return Math.round(lifetimeHours * 3_600_000);
}
