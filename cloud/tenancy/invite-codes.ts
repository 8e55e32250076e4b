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
 * When a code created at `now` expires.
 *
 * @example
 * inviteExpiry(new Date('2025-01-01T00:00:00Z')); // 2025-01-08T00:00:00.000Z
 */
export function inviteExpiry(now: Date, lifetimeHours: number = DEFAULT_INVITE_LIFETIME_HOURS): Date {
  return new Date(now.getTime() + Math.round(lifetimeHours * 3_600_000));
}
