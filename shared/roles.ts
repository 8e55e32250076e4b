/**
 * Roles, their weights, and the policies every service applies to a caller's memberships.
 */
import type { Claims, MembershipClaim } from './claims.js';
import { isSystemSubject } from './claims.js';

/** Role weights. An unknown role weighs 0. */
export const ROLE_WEIGHTS: Readonly<Record<string, number>> = Object.freeze({
  viewer: 10,
  member: 20,
  facility_manager: 30,
  business_admin: 50,
  admin: 100,
});

/** The weight at or above which a member manages a domain and counts as its administrator. */
export const MANAGE_WEIGHT = 50;
/** The weight at or above which a member edits a building (thresholds, device actions). */
export const EDIT_WEIGHT = 30;
/** The platform administrator's weight: unrestricted. */
export const PLATFORM_ADMIN_WEIGHT = 100;

/**
 * The weight of a role name.
 *
 * @example
 * roleWeight('facility_manager'); // 30
 * roleWeight('owner'); // 0
 */
export function roleWeight(role: string): number {
  return Object.prototype.hasOwnProperty.call(ROLE_WEIGHTS, role) ? (ROLE_WEIGHTS[role] ?? 0) : 0;
}

/** True when a known role name is given. */
export function isKnownRole(role: string): boolean {
  return Object.prototype.hasOwnProperty.call(ROLE_WEIGHTS, role);
}

/** True when any membership carries the platform administrator's weight. */
export function isPlatformAdmin(memberships: readonly MembershipClaim[]): boolean {
  return memberships.some((m) => roleWeight(m.role) >= PLATFORM_ADMIN_WEIGHT);
}

/**
 * CanManageDomain: a membership of `domain` with weight ≥ 50, or any membership with weight 100.
 *
 * @example
 * canManageDomain([{ domainName: 'acme', role: 'business_admin' }], 'acme'); // true
 * canManageDomain([{ domainName: 'acme', role: 'member' }], 'acme'); // false
 */
export function canManageDomain(memberships: readonly MembershipClaim[], domain: string): boolean {
  return (
    isPlatformAdmin(memberships) ||
    memberships.some((m) => m.domainName === domain && roleWeight(m.role) >= MANAGE_WEIGHT)
  );
}

/**
 * CanEditDomains: a system subject, a membership in one of `domains` with weight ≥ 30, or any
 * membership with weight 100. Used by telemetry thresholds and device actions.
 *
 * @example
 * canEditDomains({ sub: 'u', memberships: [{ domainName: 'acme', role: 'facility_manager' }] }, ['acme']); // true
 */
export function canEditDomains(claims: Pick<Claims, 'sub' | 'memberships'>, domains: readonly string[]): boolean {
  if (isSystemSubject(claims) || isPlatformAdmin(claims.memberships)) return true;
  const wanted = new Set(domains);
  return claims.memberships.some((m) => wanted.has(m.domainName) && roleWeight(m.role) >= EDIT_WEIGHT);
}

/**
 * An administrator for the last-administrator rule: a role weighing at least business_admin.
 *
 * @example
 * isAdministrator('business_admin'); // true
 * isAdministrator('facility_manager'); // false
 */
export function isAdministrator(role: string): boolean {
  return roleWeight(role) >= MANAGE_WEIGHT;
}
