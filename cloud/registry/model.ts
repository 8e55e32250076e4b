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

export interface RegistryStore {
  /** Writes one row, nothing else. */
  createOrganization(signup: Signup): Promise<Outcome<Organization, 'name_taken'>>;
  /** Every organization whose Status is provisioning, oldest first. */
  pendingOrganizations(): Promise<Organization[]>;
  /** Applies an event under a row lock, through both state machines; a refused event writes nothing. */
  applyEvent(id: string, event: OrganizationEvent): Promise<Outcome<Organization, 'not_found' | 'refused'>>;
}
