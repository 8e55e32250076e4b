/**
 * Registry's records and the port its storage adapter implements.
 */

export const TIERS = ['pooled', 'dedicated', 'on-prem'] as const;
export type Tier = (typeof TIERS)[number];

export const IDENTITY_MODES = ['platform', 'byo-idp'] as const;
export type IdentityMode = (typeof IDENTITY_MODES)[number];

export const STATUSES = ['provisioning', 'ready', 'failed', 'suspended'] as const;
export type Status = (typeof STATUSES)[number];

export const LICENSE_STATUSES = ['active', 'suspended', 'expired'] as const;
export type LicenseStatus = (typeof LICENSE_STATUSES)[number];

export interface Organization {
  id: string;
  name: string;
  displayName: string;
  tier: Tier;
  host: string;
  identityMode: IdentityMode;
  issuer: string;
  licenseStatus: LicenseStatus;
  status: Status;
  statusDetail: string | null;
  createdAt: Date;
}

export interface Signup {
  name: string;
  displayName: string;
  tier: Tier;
  identityMode: IdentityMode;
  issuer: string;
}

/** What can happen to an organization after signup. */
export type OrganizationEvent = { kind: 'provisioned'; outcome: 'ready' | 'failed'; detail: string | null } | { kind: 'suspend' };

export type Outcome<T, E extends string> = { ok: true; value: T } | { ok: false; reason: E; current?: Organization };

/**
 * Where a page of the pending list ended, as the store orders it (`created_at` to the microsecond,
 * which a Date cannot hold, then id). Opaque outside the store: pass a page's `next` back unchanged.
 */
export interface PendingCursor {
  readonly createdAt: string;
  readonly id: string;
}

export interface PendingPage {
  organizations: Organization[];
  /** Where the next page starts; absent when this page holds the last pending organization. */
  next?: PendingCursor;
}

export interface RegistryStore {
  /** Writes one row, nothing else. */
  createOrganization(signup: Signup): Promise<Outcome<Organization, 'name_taken'>>;
  /**
   * Up to `limit` organizations whose Status is provisioning, oldest first, after `after` (the `next`
   * of the page before; the first page without it). Each page is read on its own, not in one snapshot:
   * an organization that leaves provisioning meanwhile is absent from later pages, a new one appears.
   */
  pendingOrganizations(page: { after?: PendingCursor; limit: number }): Promise<PendingPage>;
  /** Applies an event under a row lock, through both state machines; a refused event writes nothing. */
  applyEvent(id: string, event: OrganizationEvent): Promise<Outcome<Organization, 'not_found' | 'refused'>>;
}
