/**
 * What an identifier looks like, for the audit of everything that leaves the gateway (and for the config,
 * which refuses names that would trip the audit). Deliberately broad: a false alarm costs a rename, a
 * miss costs someone's privacy.
 */
import { isIPv6 } from 'node:net';
import { CONTROL_CHARACTERS } from '../../../shared/kinds.js';

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

/** A decimal octet as printed without padding (`60`, `0`). */
const OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
/** A decimal octet, zero-padded or not (`60`, `060`, `010`, `000`): six in a row spell a MAC either way. */
const ANY_OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|0?\\d?\\d)';
/** A decimal octet padded to three digits (`010`, `000`). */
const PADDED_OCTET = '(?:25[0-5]|2[0-4]\\d|[01]\\d\\d)';

const PATTERNS: ReadonlyArray<readonly [IdentifierKind, RegExp]> = [
  ['uuid', /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i],
  // Six hex pairs joined by one repeated separator of any kind, or by none (aa:bb:…, aa-bb-…, aabbcc…).
  ['mac', /(?<![0-9a-f])[0-9a-f]{2}([^0-9a-z]?)[0-9a-f]{2}(?:\1[0-9a-f]{2}){4}(?![0-9a-f])/i],
  // Octets without their leading zero, as some tools print them (3c:22:fb:1:2:3), also joined to a word
  // (`ap-3c-22-fb-1-2-3`, `ap_3c_22_fb_1_2_3`), but not as a part of a longer run of such groups.
  ['mac', /(?<![0-9a-f]|[0-9a-f][:_-])[0-9a-f]{1,2}([:_-])[0-9a-f]{1,2}(?:\1[0-9a-f]{1,2}){4}(?![0-9a-f]|[:_-][0-9a-f])/i],
  // Three groups of four (Cisco's aabb.ccdd.eeff, the same with - or :, or with those mixed), or two of six
  // (aabbcc-ddeeff).
  ['mac', /(?<![0-9a-f])[0-9a-f]{4}[.:-][0-9a-f]{4}[.:-][0-9a-f]{4}(?![0-9a-f])/i],
  ['mac', /(?<![0-9a-f])[0-9a-f]{6}[.:-][0-9a-f]{6}(?![0-9a-f])/i],
  // Six pairs with any of : _ - between them, mixed too (`3c:22:fb-01-02-03`, as a tool that rewrites half
  // an address leaves it), anywhere: also run into the letters of a name (`3c:22:fb:01:02:03e`). Not `.`:
  // dotted pairs with one separator are found above, and mixed with dots they are dates and times
  // (`2026-11-27-10.30.00`).
  ['mac', /[0-9a-f]{2}(?:[:_-][0-9a-f]{2}){5}/i],
  // Six decimal octets, zero-padded or not: the MAC as an SNMP table index spells it, alone or at the end
  // of an OID.
  ['mac', new RegExp(`(?<!\\d)(?:${ANY_OCTET}\\.){5}${ANY_OCTET}(?!\\d)`)],
  // Four octets, also after a word and a dot (`ap.10.20.0.11`), but not inside a longer dotted run (an OID).
  ['ip', new RegExp(`(?<!\\d|\\d\\.)(?:${OCTET}\\.){3}${OCTET}(?!\\d|\\.\\d)`)],
  // Four octets each padded to three digits (`010.020.000.011`); a room number such as `2.01.03.12` is not.
  ['ip', new RegExp(`(?<!\\d|\\d\\.)(?:${PADDED_OCTET}\\.){3}${PADDED_OCTET}(?!\\d|\\.\\d)`)],
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

/**
 * Base64 of 16 bytes or more: a long run that is padded or holds + or /, or a long unbroken alphanumeric
 * stretch mixing both cases with several digits (names people choose break at words, or lack digits).
 * Not found: base64url (`-`, `_`) without padding, and unpadded base64 under 24 characters without + or
 * /. Neither can be told from names people choose (`HQ-Lobby-WiFi6E-Ceiling-AP`, `Campus_B12L3R04_Lab`)
 * well enough to refuse such names; the collector exports none of either.
 */
function looksLikeBase64(s: string): boolean {
  for (const m of s.matchAll(/[A-Za-z0-9+/_-]{22,}={0,2}/g)) {
    if (/[+/]|=$/.test(m[0]) && /\d/.test(m[0])) return true;
  }
  for (const m of s.matchAll(/[A-Za-z0-9]{24,}/g)) {
    const run = m[0];
    if ((run.match(/\d/g)?.length ?? 0) >= 2 && /[a-z]/.test(run) && /[A-Z]/.test(run)) return true;
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

const CONTROL_CHARACTER = new RegExp(CONTROL_CHARACTERS.source, 'g');

/**
 * A value shortened for a report line, so a finding does not print the identifier it found. The two
 * characters it keeps are shown as U+FFFD when they are control characters, which a terminal would obey.
 */
export function masked(s: string): string {
  if (s.length <= 4) return '*'.repeat(s.length);
  return `${s.slice(0, 2).replace(CONTROL_CHARACTER, '\ufffd')}${'*'.repeat(Math.min(s.length - 2, 12))}(${s.length} chars)`;
}

const everywhere = (pattern: RegExp) => new RegExp(pattern.source, `${pattern.flags}g`);

/** Every spelling {@link identifierKind} takes for a MAC, to replace each occurrence. */
const MAC_REDACTIONS = PATTERNS.filter(([kind]) => kind === 'mac').map(([, pattern]) => everywhere(pattern));

/**
 * A run of seven dotted numbers or more: an OID long enough to carry a table index, which for station
 * tables is the station's MAC in decimal octets (as net-snmp quotes a request's OID in `GeneralError:
 * <oid>`), or an index of a MAC and more. Replaced whole, before the MAC patterns: the decimal one,
 * matched leftmost along such a run, falls out of step with the index (`1.3.6.1.4.1`, then `2.2.1.5.2.2`,
 * …) and leaves its last octets. Six alone are a MAC, found as one. Tried only where a number starts
 * after no digit, so a long run costs its length.
 */
const OID_RUN = /(?<!\d)\d+(?:\.\d+){6,}(?!\d)/g;

const UUID_REDACTION = everywhere(PATTERNS.find(([kind]) => kind === 'uuid')![1]);

/**
 * A text with every OID (a run of seven dotted numbers or more) replaced by `oidReplacement`, then every
 * MAC-like substring by `replacement`, in any spelling the audit counts as a MAC (`aa:bb:…`, separators
 * mixed as in `aa:bb:cc-dd-ee-ff`, `aabb.ccdd.eeff`, `aabbcc-ddeeff`, `3c:22:fb:1:2:3`, the decimal octets
 * of an SNMP index, zero-padded or not). The poller's scrub of what an AP says and {@link redactIdentifiers}
 * both go through here.
 *
 * @example
 * redactMacs('station aabb-ccdd-eeff left', '<mac>'); // 'station <mac> left'
 * redactMacs('GeneralError: 1.3.6.1.4.1.14823.2.2.1.5.2.2.1.1.14.4.211.176.18.52.86', '<mac>', '<oid>'); // 'GeneralError: <oid>'
 */
export function redactMacs(text: string, replacement: string, oidReplacement = replacement): string {
  let out = text.replace(OID_RUN, oidReplacement);
  for (const pattern of MAC_REDACTIONS) out = out.replace(pattern, replacement);
  return out;
}

/**
 * A text (an error message, a reason) with anything identifier-like replaced, safe to log.
 *
 * @example
 * redactIdentifiers('no answer for 3c:22:fb:01:02:03'); // 'no answer for [mac]'
 * redactIdentifiers('GeneralError: 1.3.6.1.4.1.25053.1.2.2.1.1.3.1.1.9.4.211.176.18.52.86'); // 'GeneralError: [oid]'
 */
export function redactIdentifiers(text: string): string {
  const out = redactMacs(text.replace(UUID_REDACTION, '[uuid]'), '[mac]', '[oid]');
  return out.replace(/[0-9a-f]{16,}/gi, '[hex]');
}
