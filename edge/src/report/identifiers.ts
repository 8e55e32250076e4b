/**
 * What an identifier looks like, for the audit of everything that leaves the gateway (and for the config,
 * which refuses names that would trip the audit). Deliberately broad: a false alarm costs a rename, a
 * miss costs someone's privacy.
 */
import { isIPv6 } from 'node:net';

export type IdentifierKind = 'mac' | 'uuid' | 'hex' | 'base64' | 'ip' | 'hostname';

/** Each kind in words, for "looks like …" in audit findings and config errors. */
export const IDENTIFIER_WORDS: Readonly<Record<IdentifierKind, string>> = {
  mac: 'a MAC',
  uuid: 'a UUID',
  hex: 'a hash (long hex)',
  base64: 'base64',
  ip: 'an IP address',
  hostname: 'a local host name',
};

/** A decimal octet, zero-padded or not (`60`, `060`, `010`, `000`), as tools print an SNMP index or an address. */
const OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|0?\\d?\\d)';

const PATTERNS: ReadonlyArray<readonly [IdentifierKind, RegExp]> = [
  ['uuid', /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i],
  // Six hex pairs joined by one repeated separator of any kind, or by none (aa:bb:…, aa-bb-…, aabbcc…).
  ['mac', /(?<![0-9a-f])[0-9a-f]{2}([^0-9a-z]?)[0-9a-f]{2}(?:\1[0-9a-f]{2}){4}(?![0-9a-f])/i],
  // Octets without their leading zero, as some tools print them (3c:22:fb:1:2:3).
  ['mac', /(?<![0-9a-f:-])[0-9a-f]{1,2}([:-])[0-9a-f]{1,2}(?:\1[0-9a-f]{1,2}){4}(?![0-9a-f:-])/i],
  // Three groups of four (Cisco's aabb.ccdd.eeff, the same with - or :, or with those mixed), or two of six
  // (aabbcc-ddeeff).
  ['mac', /(?<![0-9a-f])[0-9a-f]{4}[.:-][0-9a-f]{4}[.:-][0-9a-f]{4}(?![0-9a-f])/i],
  ['mac', /(?<![0-9a-f])[0-9a-f]{6}[.:-][0-9a-f]{6}(?![0-9a-f])/i],
  // Six pairs with any of : . - between them, mixed too (`3c:22:fb-01-02-03`, as a tool that rewrites half
  // an address leaves it), anywhere: also run into the letters of a name (`3c:22:fb:01:02:03e`).
  ['mac', /[0-9a-f]{2}(?:[.:-][0-9a-f]{2}){5}/i],
  // Six decimal octets: the MAC as an SNMP table index spells it, alone or at the end of an OID.
  ['mac', new RegExp(`(?<!\\d)(?:${OCTET}\\.){5}${OCTET}(?!\\d)`)],
  ['ip', new RegExp(`(?<![\\d.])(?:${OCTET}\\.){3}${OCTET}(?![\\d.])`)],
  // A host name on the local network (mDNS .local, a home router's .lan), where devices name themselves.
  ['hostname', /[a-z0-9-]\.(?:local|lan|localdomain|internal|home\.arpa)(?![a-z0-9-])/i],
  // A hash or key in hex: 16 hex characters or more in a row.
  ['hex', /[0-9a-f]{16,}/i],
  // A MAC run into the letters of a name (`device3c22fb010203`): 12 to 15 hex characters in a row
  // holding a digit. Tried only where a run of hex starts: a run without a digit fails there and so does
  // every part of it, and trying each position of a long one (text from an AP) took quadratic time.
  ['mac', /(?<![0-9a-f])(?=[0-9a-f]*\d)[0-9a-f]{12,}/i],
];

/**
 * An IPv6 address: a run of hex, colons and dots with two colons or more that parses as one, whole or
 * from its first colon or dot on (the address after a zone id such as `%eth0`, whose letters run into it).
 * Whole runs, not a search from every position, which took quadratic time over a long run without colons.
 */
function containsIPv6(s: string): boolean {
  for (const [run] of s.matchAll(/[0-9a-f:.]+/gi)) {
    if (run.indexOf(':') === run.lastIndexOf(':')) continue;
    if (isIPv6(run) || isIPv6(run.slice(run.search(/[:.]/)))) return true;
  }
  return false;
}

/** A word of a name: capitalised or lowercase (`North`, `wing`), in capitals (`HQ`), or a number. */
const WORD = /[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+/g;

/**
 * Whether a run reads as a name: every piece between its dashes and underscores holds at most three
 * words (`North-Wing-2F`, `MeetingRoom3`, `iPhone_Lab`). Random base64 almost never does: its pieces are
 * long, and switch case and class every character or two.
 */
function readsAsWords(run: string): boolean {
  return run.split(/[-_]+/).every((piece) => (piece.match(WORD)?.length ?? 0) <= 3);
}

/**
 * Base64 of 16 bytes or more (22 characters unpadded), standard or URL-safe (`-_`), padded or not: a run
 * of base64 characters holding a digit that is padded or holds + or /, or that mixes both cases and does
 * not read as words. A name mixing cases that does read as words passes (`North-Wing-Second-Floor-2`);
 * one long piece of run-together words with a digit (`Floor3MeetingRoomNorthWing`) is taken for base64:
 * dashes between its words make it a name. Whole runs, each scanned once: linear in the text.
 */
function looksLikeBase64(s: string): boolean {
  for (const [match] of s.matchAll(/[A-Za-z0-9+/_-]{22,}={0,2}/g)) {
    if (!/\d/.test(match)) continue;
    if (/[+/]|=$/.test(match)) return true;
    if (/[a-z]/.test(match) && /[A-Z]/.test(match) && !readsAsWords(match)) return true;
  }
  return false;
}

/**
 * The kind of identifier `s` contains, or null.
 *
 * @example
 * identifierKind('ap 3C-22-FB-01-02-03'); // 'mac'
 * identifierKind('60.34.251.1.2.3'); // 'mac' (decimal, as in an SNMP index)
 * identifierKind('10.20.0.11'); // 'ip'
 * identifierKind('lobby'); // null
 */
export function identifierKind(s: string): IdentifierKind | null {
  for (const [kind, pattern] of PATTERNS) if (pattern.test(s)) return kind;
  if (containsIPv6(s)) return 'ip';
  if (looksLikeBase64(s)) return 'base64';
  return null;
}

/** True when `s` contains anything identifier-like. */
export function looksLikeIdentifier(s: string): boolean {
  return identifierKind(s) !== null;
}

/** A value shortened for a report line, so a finding does not print the identifier it found. */
export function masked(s: string): string {
  if (s.length <= 4) return '*'.repeat(s.length);
  return `${s.slice(0, 2)}${'*'.repeat(Math.min(s.length - 2, 12))}(${s.length} chars)`;
}

const everywhere = (pattern: RegExp) => new RegExp(pattern.source, `${pattern.flags}g`);

/** Every spelling {@link identifierKind} takes for a MAC, to replace each occurrence. */
const MAC_REDACTIONS = PATTERNS.filter(([kind]) => kind === 'mac').map(([, pattern]) => everywhere(pattern));

const REDACTIONS: ReadonlyArray<readonly [RegExp, string]> = [
  // An OID long enough to carry a table index, which for station tables is the station's MAC.
  [/\b\d+(?:\.\d+){12,}\b/g, '[oid]'],
  ...PATTERNS.filter(([kind]) => kind === 'uuid').map(([, pattern]) => [everywhere(pattern), '[uuid]'] as const),
  ...MAC_REDACTIONS.map((pattern) => [pattern, '[mac]'] as const),
  [/[0-9a-f]{16,}/gi, '[hex]'],
];

/**
 * A text with every MAC-like substring replaced, in any spelling the audit counts as a MAC
 * (`aa:bb:…`, separators mixed as in `aa:bb:cc-dd-ee-ff`, `aabb.ccdd.eeff`, `aabbcc-ddeeff`, `3c:22:fb:1:2:3`,
 * the decimal octets of an SNMP index, zero-padded or not).
 *
 * @example
 * redactMacs('station aabb-ccdd-eeff left', '<mac>'); // 'station <mac> left'
 */
export function redactMacs(text: string, replacement: string): string {
  let out = text;
  for (const pattern of MAC_REDACTIONS) out = out.replace(pattern, replacement);
  return out;
}

/**
 * A text (an error message, a reason) with anything identifier-like replaced, safe to log.
 *
 * @example
 * redactIdentifiers('no answer for 3c:22:fb:01:02:03'); // 'no answer for [mac]'
 */
export function redactIdentifiers(text: string): string {
  let out = text;
  for (const [pattern, replacement] of REDACTIONS) out = out.replace(pattern, replacement);
  return out;
}
