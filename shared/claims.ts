/**
 * The identity contract: `x-gateway-claims` is base64 (standard or URL-safe, padding optional) of a
 * UTF-8 JSON object carrying `sub`, `accountName` and `memberships`. A service mesh verifies the token
 * once at ingress and injects this header; services trust it and never check a signature.
 */
import * as t from 'io-ts';
import { storableText } from './kinds.js';

/** The header the mesh injects. Lower-case, as Node exposes incoming headers. */
export const CLAIMS_HEADER = 'x-gateway-claims';

export const MembershipClaim = t.type({ domainName: t.string, role: t.string });
export type MembershipClaim = t.TypeOf<typeof MembershipClaim>;

/** A decoded, trusted identity. */
export interface Claims {
  /** account_id */
  sub: string;
  /** account_name, when the payload carries one */
  accountName?: string;
  memberships: MembershipClaim[];
}

export type ClaimsRejection =
  | 'missing'
  | 'not base64'
  | 'not UTF-8'
  | 'not JSON'
  | 'not a JSON object'
  | 'sub missing or not a string'
  | 'accountName missing'
  | 'text holds NUL or a lone surrogate';

export type ClaimsResult = { ok: true; claims: Claims } | { ok: false; reason: ClaimsRejection };

const BASE64 = /^[A-Za-z0-9+/\-_]*={0,2}$/;
const MAX_HEADER_BYTES = 16 * 1024;
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** The memberships that can be read: each an object with storable `domainName` and `role` texts. */
function membershipsOf(value: unknown): MembershipClaim[] {
  if (!Array.isArray(value)) return [];
  const out: MembershipClaim[] = [];
  for (const entry of value) {
    if (MembershipClaim.is(entry) && entry.domainName !== '' && storableText(entry.domainName) && storableText(entry.role)) out.push({ domainName: entry.domainName, role: entry.role });
  }
  return out;
}

/**
 * Decodes an `x-gateway-claims` header value. Never throws: a rejected header gives a reason.
 *
 * @example
 * const header = Buffer.from(JSON.stringify({ sub: 'u1', memberships: [] })).toString('base64url');
 * decodeClaims(header); // { ok: true, claims: { sub: 'u1', memberships: [] } }
 * decodeClaims(undefined); // { ok: false, reason: 'missing' }
 */
export function decodeClaims(
  header: string | string[] | undefined,
  options: { requireAccountName?: boolean } = {},
): ClaimsResult {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || value.trim() === '') return { ok: false, reason: 'missing' };
  const text = value.trim();
  if (text.length > MAX_HEADER_BYTES || !BASE64.test(text) || text.replace(/=+$/, '').length % 4 === 1) {
    return { ok: false, reason: 'not base64' };
  }
  let json: string;
  try {
    json = UTF8.decode(Buffer.from(text.replace(/-/g, '+').replace(/_/g, '/'), 'base64'));
  } catch {
    // A lenient decode would turn different invalid bytes into the same U+FFFD, so two subjects could meet.
    return { ok: false, reason: 'not UTF-8' };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return { ok: false, reason: 'not JSON' };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    return { ok: false, reason: 'not a JSON object' };
  }
  const record = parsed as Record<string, unknown>;
  // CONTRACTS: rejected when there is no string `sub`. An empty one is no subject either, and one the
  // stores cannot hold as sent could be stored, and matched, as another owner.
  if (typeof record.sub !== 'string' || record.sub === '') return { ok: false, reason: 'sub missing or not a string' };
  if (!storableText(record.sub)) return { ok: false, reason: 'text holds NUL or a lone surrogate' };
  // Past `sub`, nothing rejects the header: an accountName or a membership that cannot be read as a
  // storable text is left out, which only ever takes rights away.
  const claims: Claims = { sub: record.sub, memberships: membershipsOf(record.memberships) };
  const accountName = record.accountName;
  if (typeof accountName === 'string' && accountName !== '' && storableText(accountName)) claims.accountName = accountName;
  if (options.requireAccountName && !claims.accountName) return { ok: false, reason: 'accountName missing' };
  return { ok: true, claims };
}

/**
 * Encodes claims the way the mesh does (URL-safe base64, no padding). For tests, tools and the
 * system identity a service uses on its own outbound calls.
 *
 * @example
 * encodeClaims({ sub: 'system:notification-service', memberships: [] });
 */
export function encodeClaims(claims: { sub: string; accountName?: string; memberships?: MembershipClaim[] }): string {
  return Buffer.from(JSON.stringify({ memberships: [], ...claims }), 'utf8').toString('base64url');
}

/** The names of the domains the claims hold a membership in, without duplicates. */
export function domainsOf(claims: Claims): string[] {
  return [...new Set(claims.memberships.map((m) => m.domainName))];
}

/** True for a service identity: `sub` is `system:<service>`. */
export function isSystemSubject(claims: Pick<Claims, 'sub'>): boolean {
  return claims.sub.startsWith('system:');
}

/**
 * The claims a service uses when it acts on its own behalf (no user), e.g. the notification breach path.
 *
 * @example
 * systemClaims('notification-service'); // { sub: 'system:notification-service', memberships: [] }
 */
export function systemClaims(service: string): Claims {
  return { sub: `system:${service}`, memberships: [] };
}
