/**
 * Tenancy's decisions, as plain functions of the caller's claims and plain values.
 */
import type { Claims, MembershipClaim } from '../../shared/claims.js';
import { canManageDomain, isAdministrator, isPlatformAdmin, roleWeight } from '../../shared/roles.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True for a canonical uuid string (any case). */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

/** The account id of a caller, lower-cased, or undefined when the subject is not an account (e.g. `system:x`). */
export function accountIdOf(claims: Pick<Claims, 'sub'>): string | undefined {
  return isUuid(claims.sub) ? claims.sub.toLowerCase() : undefined;
}

export type RemovalAuthority = 'self' | 'manager' | 'forbidden';

/**
 * Who may remove `targetAccountId` from `domain`: anyone may remove themselves (an identity comparison,
 * made before any policy), otherwise the caller needs CanManageDomain.
 *
 * @example
 * removalAuthority({ sub: a, memberships: [] }, 'acme', a); // 'self'
 */
export function removalAuthority(caller: Claims, domain: string, targetAccountId: string): RemovalAuthority {
  if (caller.sub.toLowerCase() === targetAccountId.toLowerCase()) return 'self';
  return canManageDomain(caller.memberships, domain) ? 'manager' : 'forbidden';
}

/**
 * A manager may grant a role up to their own weight in the domain; only a platform administrator may
 * grant more (in particular `admin`, which is platform-wide).
 *
 * @example
 * mayGrantRole([{ domainName: 'acme', role: 'business_admin' }], 'acme', 'member'); // true
 * mayGrantRole([{ domainName: 'acme', role: 'business_admin' }], 'acme', 'admin'); // false
 */
export function mayGrantRole(memberships: readonly MembershipClaim[], domain: string, role: string): boolean {
  if (isPlatformAdmin(memberships)) return true;
  const own = Math.max(0, ...memberships.filter((m) => m.domainName === domain).map((m) => roleWeight(m.role)));
  return roleWeight(role) <= own;
}

/** Why an account may not issue an invite code: it may not manage the domain, or not grant the role. */
export type InviteCodeRefusal = 'may_not_manage' | 'may_not_grant';

/**
 * Why an account holding `memberships` may not grant `role` in `domain`, by an invite code or a direct
 * invitation, or undefined when it may: the route's own check (CanManageDomain, then the role's
 * weight). The route asks it of the caller's token, the store again of the memberships as stored,
 * since a token outlives a removal.
 *
 * @example
 * inviteCodeRefusal([{ domainName: 'acme', role: 'business_admin' }], 'acme', 'admin'); // 'may_not_grant'
 * inviteCodeRefusal([{ domainName: 'globex', role: 'business_admin' }], 'acme', 'member'); // 'may_not_manage'
 */
export function inviteCodeRefusal(memberships: readonly MembershipClaim[], domain: string, role: string): InviteCodeRefusal | undefined {
  if (!canManageDomain(memberships, domain)) return 'may_not_manage';
  if (!mayGrantRole(memberships, domain, role)) return 'may_not_grant';
  return undefined;
}

/**
 * Whether an account holding `memberships` may issue an invite code granting `role` in `domain` (see
 * inviteCodeRefusal). A code lives only as long as this holds for its creator, so a removed
 * administrator cannot come back through a code she made.
 *
 * @example
 * mayIssueInviteCode([{ domainName: 'acme', role: 'business_admin' }], 'acme', 'business_admin'); // true
 * mayIssueInviteCode([{ domainName: 'globex', role: 'business_admin' }], 'acme', 'member'); // false
 */
export function mayIssueInviteCode(memberships: readonly MembershipClaim[], domain: string, role: string): boolean {
  return inviteCodeRefusal(memberships, domain, role) === undefined;
}

/**
 * Whether a caller sees a domain's private children in its subdomain listing: a member of the domain
 * (any role) or a platform administrator. Anyone else sees only the public ones, as the listing of
 * root domains shows only public domains.
 *
 * @example
 * maySeePrivateSubdomains([{ domainName: 'acme', role: 'viewer' }], 'acme'); // true
 * maySeePrivateSubdomains([{ domainName: 'acme-lab', role: 'business_admin' }], 'acme'); // false
 */
export function maySeePrivateSubdomains(memberships: readonly MembershipClaim[], domain: string): boolean {
  return isPlatformAdmin(memberships) || memberships.some((m) => m.domainName === domain);
}

/**
 * The last-administrator rule: removing a member whose role is an administrator's (weight ≥ 50) must
 * leave at least one administrator. `roleCounts` is the domain's members counted by role, target included.
 *
 * @example
 * leavesNoAdministrator({ business_admin: 1, member: 4 }, 'business_admin'); // true
 * leavesNoAdministrator({ business_admin: 1, admin: 1 }, 'business_admin'); // false
 */
export function leavesNoAdministrator(roleCounts: Readonly<Record<string, number>>, targetRole: string): boolean {
  if (!isAdministrator(targetRole)) return false;
  let administrators = 0;
  for (const [role, count] of Object.entries(roleCounts)) if (isAdministrator(role)) administrators += count;
  return administrators <= 1;
}
