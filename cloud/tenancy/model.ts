/**
 * Tenancy's records as the domain logic sees them, and the port its storage adapter implements.
 * Nothing here knows about SQL or HTTP.
 */
import type { InviteCodeRefusal } from './policy.js';

export const JOIN_POLICIES = ['open-via-idp', 'invite-only'] as const;
export type JoinPolicy = (typeof JOIN_POLICIES)[number];

export const JOINED_VIA = ['self-idp', 'invite', 'local'] as const;
export type JoinedVia = (typeof JOINED_VIA)[number];

export interface Domain {
  id: string;
  name: string;
  displayName: string;
  joinPolicy: JoinPolicy;
  isPublic: boolean;
  createdAt: Date;
  parentId: string | null;
}

/** A domain as a listing shows it: with the number of its members. */
export interface ListedDomain extends Domain {
  memberCount: number;
}

export interface Membership {
  accountId: string;
  domainId: string;
  domainName: string;
  role: string;
  externalId: string | null;
  joinedVia: JoinedVia;
}

export interface InviteCode {
  code: string;
  domainName: string;
  role: string;
  expiresAt: Date;
}

export interface NewDomain {
  name: string;
  displayName: string;
  joinPolicy: JoinPolicy;
  isPublic: boolean;
}

export interface NewMember {
  accountId: string;
  role: string;
  joinedVia: JoinedVia;
  externalId?: string | undefined;
  /**
   * The account inviting it, when one does (a direct invitation). Its memberships as stored, not its
   * token, must let it manage the domain and grant the role (see inviteCodeRefusal): a removed
   * administrator's token outlives her membership, and would otherwise add her back.
   */
  invitedBy?: string | undefined;
}

/** One page of a keyset-paged listing: entries after `after` (a domain name), in name order. */
export interface Page {
  after?: string | undefined;
  /** At most this many; undefined for all. */
  limit?: number | undefined;
}

export type Outcome<T, E extends string> = { ok: true; value: T } | { ok: false; reason: E };

/**
 * The storage port. Every method is one transaction; concurrency rules are enforced inside it.
 * A method that would add a membership for an account the account-deleted event removed answers
 * `account_deleted` and writes nothing.
 */
/** An invite code to store: its domain, the role it grants, who makes it and for how long. */
export interface NewInviteCode {
  domainName: string;
  code: string;
  role: string;
  createdBy: string;
  lifetimeMs: number;
}

export interface TenancyStore {
  /**
   * Creates a domain (under `parentName` when given) and makes `creatorId` its business_admin. Under a
   * parent, the creator's memberships as stored must let it manage the parent (`may_not_manage`
   * otherwise), since its token may outlive them.
   */
  createDomain(
    input: NewDomain & { parentName?: string },
    creatorId: string,
  ): Promise<Outcome<Domain, 'name_taken' | 'parent_not_found' | 'account_deleted' | 'may_not_manage'>>;
  /**
   * Idempotent create for internal callers: an identical domain that an earlier internal call created
   * for the same administrator (or, like it, none) is returned as is; one with other attributes, for
   * another administrator, or one an end user created, is a conflict. A provisioned domain with no
   * administrator recorded (created before that was recorded) takes the one named when provisioning
   * made that account its business_admin. The admin membership is ensured either way.
   */
  ensureDomain(
    input: NewDomain & { parentName?: string; adminAccountId?: string },
  ): Promise<Outcome<Domain, 'parent_not_found' | 'conflicting_domain' | 'account_deleted'>>;
  findDomain(name: string): Promise<Domain | undefined>;
  /**
   * One keyset page of public domains, in name order, with member counts. `limit` is required: any
   * account may make public domains, without limit, so the whole listing is read a page at a time and
   * never held at once (see routes/paging.ts).
   */
  listPublicDomains(page: Page & { limit: number }): Promise<ListedDomain[]>;
  /**
   * Direct children of `parentName` (`public`: only the public ones), or undefined when there is no
   * such domain.
   */
  listSubdomains(parentName: string, page: Page & { limit: number }, visible: 'all' | 'public'): Promise<ListedDomain[] | undefined>;
  /** Every membership of an account, in domain name order: the login path. */
  membershipsOf(accountId: string): Promise<Membership[]>;
  /**
   * Adds a member. When the account is already a member, `onExisting` decides: `keep` returns the
   * existing membership unchanged (idempotent callers), `refuse` reports `already_member`. With
   * `invitedBy`, the inviter is checked first, as createInviteCode checks a code's creator: a deleted
   * inviter answers `inviter_deleted`, and one whose stored memberships do not allow the invitation
   * the InviteCodeRefusal, before anything is told about the invitee.
   */
  addMember(
    domainName: string,
    member: NewMember,
    onExisting: 'keep' | 'refuse',
  ): Promise<
    Outcome<{ membership: Membership; created: boolean }, 'domain_not_found' | 'already_member' | 'account_deleted' | 'inviter_deleted' | InviteCodeRefusal>
  >;
  /**
   * Removes a membership, holding the domain row lock while it counts administrators, so two removals
   * racing can never leave the domain without one. The account's unredeemed invite codes that it may
   * no longer issue (see mayIssueInviteCode) are deleted with it. A `remover` other than the account
   * itself must manage the domain by its memberships as stored, since its token may outlive them: a
   * deleted remover answers `remover_deleted`, one without the right `may_not_manage`.
   */
  removeMember(
    domainName: string,
    accountId: string,
    remover?: string,
  ): Promise<Outcome<Membership, 'domain_not_found' | 'not_member' | 'last_administrator' | 'remover_deleted' | 'may_not_manage'>>;
  /**
   * Stores a new code. The creator's right (see inviteCodeRefusal) is checked against its memberships as
   * stored, since its token may outlive them: a removed administrator makes none, and a deleted creator
   * none either. A removal of the creator racing it revokes the code or comes first and refuses it.
   */
  createInviteCode(input: NewInviteCode): Promise<Outcome<InviteCode, 'domain_not_found' | 'account_deleted' | InviteCodeRefusal>>;
  /** Marks the code redeemed and adds the membership, atomically; exactly one racer wins a code. */
  redeemInviteCode(code: string, accountId: string): Promise<Outcome<Membership, 'invalid_code' | 'already_member' | 'account_deleted'>>;
  /**
   * The account-deleted event: records the deletion and removes every membership of the account, and
   * every unredeemed invite code it made; returns how many memberships. A write adding a membership for
   * it, or a code by it, under way or later, is refused or removed.
   */
  removeAccount(accountId: string): Promise<number>;
}
