/**
 * Who may act on which domains. Unrestricted: a `system:` subject or a holder of the admin role (weight
 * 100). Everyone else is limited to the domains of their memberships.
 */
import { domainsOf, isSystemSubject, type Claims } from '../../shared/claims.js';
import { isPlatformAdmin } from '../../shared/roles.js';

/** True for a system subject or a platform administrator. */
export function isUnrestricted(claims: Claims): boolean {
  return isSystemSubject(claims) || isPlatformAdmin(claims.memberships);
}

/** May the caller keep preferences or device registrations in `domain`? */
export function mayUseDomain(claims: Claims, domain: string): boolean {
  return isUnrestricted(claims) || domainsOf(claims).includes(domain);
}

/** Where a manual alert goes. */
export type TriggerAudience =
  | { kind: 'domains'; domains: string[] }
  /** The building has no domains and the caller is unrestricted: one notification with no domain. */
  | { kind: 'unscoped' }
  /** The building has no domains and the caller is a member somewhere: nothing to fan out to. */
  | { kind: 'no_domains' }
  /** The building has domains and none of them is the caller's. */
  | { kind: 'forbidden' };

/**
 * Fans a manual alert out to the building's domains intersected with the caller's; unrestricted
 * callers reach every domain of the building.
 *
 * @example
 * triggerAudience({ sub: 'u', memberships: [{ domainName: 'acme', role: 'member' }] }, ['acme', 'other']);
 * // { kind: 'domains', domains: ['acme'] }
 */
export function triggerAudience(claims: Claims, buildingDomains: readonly string[]): TriggerAudience {
  const unrestricted = isUnrestricted(claims);
  if (buildingDomains.length === 0) return unrestricted ? { kind: 'unscoped' } : { kind: 'no_domains' };
  if (unrestricted) return { kind: 'domains', domains: [...new Set(buildingDomains)] };
  const mine = new Set(domainsOf(claims));
  const domains = [...new Set(buildingDomains)].filter((d) => mine.has(d));
  return domains.length > 0 ? { kind: 'domains', domains } : { kind: 'forbidden' };
}
