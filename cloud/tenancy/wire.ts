/**
 * Tenancy's wire: the request bodies it accepts (io-ts, checked once at the boundary, every problem
 * reported with its path) and the camelCase JSON it answers with (CONTRACTS.md, Tenancy).
 */
import * as t from 'io-ts';
import { decode, NonEmptyString, storableText } from '../../shared/kinds.js';
import { HttpError, reportedProblems, unknownKeyProblems } from '../../shared/errors.js';
import { isKnownRole, ROLE_WEIGHTS } from '../../shared/roles.js';
import type { Domain, InviteCode, ListedDomain, Membership } from './model.js';
import { JOIN_POLICIES, JOINED_VIA } from './model.js';
import { isUuid } from './policy.js';

const DOMAIN_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** A string codec whose failures read `expected <description>`. */
function describedString(description: string, accept: (s: string) => boolean): t.Type<string, string, unknown> {
  return new t.Type<string, string, unknown>(
    description,
    (u): u is string => typeof u === 'string' && accept(u),
    (u, c) => (typeof u === 'string' && accept(u) ? t.success(u) : t.failure(u, c)),
    t.identity,
  );
}

function oneOf<const V extends readonly string[]>(values: V): t.Type<V[number], V[number], unknown> {
  return describedString(`one of ${values.map((v) => JSON.stringify(v)).join(', ')}`, (s) => values.includes(s)) as unknown as t.Type<
    V[number],
    V[number],
    unknown
  >;
}

/** True for a name a domain may carry: 1 to 63 of [a-z0-9-], not starting with '-'. */
export function isDomainName(value: string): boolean {
  return DOMAIN_NAME.test(value);
}

/**
 * Free text that is stored: non-blank, at most 256 characters, and without NUL, which a PostgreSQL
 * text column cannot hold (it would otherwise surface as a 500 instead of naming the field), or an
 * unpaired surrogate, which would be stored as U+FFFD instead of what was sent.
 */
export const Text = describedString(
  'a non-empty string of at most 256 characters, without NUL (\\u0000) or unpaired surrogates',
  (s) => s.trim().length > 0 && s.length <= 256 && storableText(s),
);
export const DomainName = describedString('a domain name: 1 to 63 of [a-z0-9-], not starting with "-"', isDomainName);
export const AccountId = describedString('an account id (uuid)', isUuid);
export const Role = describedString(`a role (${Object.keys(ROLE_WEIGHTS).join(', ')})`, isKnownRole);
export const JoinPolicy = oneOf(JOIN_POLICIES);
export const JoinedVia = oneOf(JOINED_VIA);
const HOURS_PER_YEAR = 24 * 366;
/**
 * The shortest invite lifetime: one minute. Expiry is kept to the millisecond, so a smaller positive
 * number (1e-7 hours rounds to 0 ms) would answer 201 with a code that had already expired.
 */
export const MIN_LIFETIME_HOURS = 1 / 60;
const isLifetimeHours = (u: unknown): u is number => typeof u === 'number' && Number.isFinite(u) && u >= MIN_LIFETIME_HOURS && u <= HOURS_PER_YEAR;
export const LifetimeHours = new t.Type<number, number, unknown>(
  `a number of hours from ${MIN_LIFETIME_HOURS.toFixed(4)} (one minute) to ${HOURS_PER_YEAR}`,
  isLifetimeHours,
  (u, c) => (isLifetimeHours(u) ? t.success(u) : t.failure(u, c)),
  t.identity,
);
/**
 * An identifier another system gave (the identity provider's id of the account): refuses every control
 * character, like every other id in Lintel, since it is matched, logged and copied into tokens.
 */
export const ExternalId = NonEmptyString;

export const CreateDomainBody = t.intersection([
  t.type({ name: DomainName, displayName: Text }),
  t.partial({ joinPolicy: JoinPolicy, isPublic: t.boolean }),
]);
export const InviteBody = t.type({ accountId: AccountId, role: Role });
export const InviteCodeBody = t.intersection([t.type({ role: Role }), t.partial({ expiresInHours: LifetimeHours })]);
export const ProvisionBody = t.intersection([
  t.type({ accountId: AccountId, domainName: DomainName, role: Role }),
  t.partial({ externalId: ExternalId, joinedVia: JoinedVia }),
]);
export const InternalDomainBody = t.intersection([
  t.type({ name: DomainName, displayName: Text }),
  t.partial({ parentName: DomainName, joinPolicy: JoinPolicy, isPublic: t.boolean, adminAccountId: AccountId }),
]);

const KEYS = {
  CreateDomainBody: ['name', 'displayName', 'joinPolicy', 'isPublic'],
  InviteBody: ['accountId', 'role'],
  InviteCodeBody: ['role', 'expiresInHours'],
  ProvisionBody: ['accountId', 'domainName', 'role', 'externalId', 'joinedVia'],
  InternalDomainBody: ['name', 'displayName', 'parentName', 'joinPolicy', 'isPublic', 'adminAccountId'],
} as const;

/**
 * Decodes a request body, or throws a 400 naming every problem: missing or malformed fields, and keys
 * the route does not know (a typo must not be silently ignored).
 */
export function parseBody<A>(codec: t.Type<A, unknown, unknown>, shape: keyof typeof KEYS, body: unknown): A {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new HttpError(400, 'request body: expected a JSON object');
  }
  const allowed: readonly string[] = KEYS[shape];
  const unknownKeys = Object.keys(body).filter((key) => !allowed.includes(key));
  const decoded = decode(codec, body);
  const unknown = unknownKeyProblems(unknownKeys, (key) => `${key}: not a field of this request (expected ${allowed.join(', ')})`);
  const errors = reportedProblems([...(decoded.ok ? [] : decoded.errors), ...unknown.problems], unknown.notListed);
  if (!decoded.ok || errors.length > 0) throw new HttpError(400, errors.join('; '), { errors });
  return decoded.value;
}

/**
 * The answer to a write naming an account the account-deleted event removed: 403 when it is the
 * caller's own (a token that outlived the account), 409 when a manager or an internal caller names it.
 */
export function deletedAccountError(accountId: string, status: 403 | 409): HttpError {
  return new HttpError(status, `account ${accountId} has been deleted`);
}

/** Domain JSON: `{id, name, displayName, joinPolicy, isPublic, createdAt, parentId?}`. */
export function domainJson(domain: Domain): Record<string, unknown> {
  return {
    id: domain.id,
    name: domain.name,
    displayName: domain.displayName,
    joinPolicy: domain.joinPolicy,
    isPublic: domain.isPublic,
    createdAt: domain.createdAt.toISOString(),
    ...(domain.parentId !== null ? { parentId: domain.parentId } : {}),
  };
}

/** A listing entry: the domain, plus `memberCount` unless it is zero. */
export function listedDomainJson(domain: ListedDomain): Record<string, unknown> {
  return { ...domainJson(domain), ...(domain.memberCount > 0 ? { memberCount: domain.memberCount } : {}) };
}

/** Membership JSON: `{accountId, domainId, domainName, role, externalId?, joinedVia}`. */
export function membershipJson(membership: Membership): Record<string, unknown> {
  return {
    accountId: membership.accountId,
    domainId: membership.domainId,
    domainName: membership.domainName,
    role: membership.role,
    ...(membership.externalId !== null ? { externalId: membership.externalId } : {}),
    joinedVia: membership.joinedVia,
  };
}

/** An invite code as its creator receives it. */
export function inviteCodeJson(code: InviteCode): Record<string, unknown> {
  return { code: code.code, domainName: code.domainName, role: code.role, expiresAt: code.expiresAt.toISOString() };
}
