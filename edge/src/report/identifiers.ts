/**
 * What an identifier looks like, for the audit of everything that leaves the gateway (and for the config,
 * which refuses names that would trip the audit). Deliberately broad: a false alarm costs a rename, a
 * miss costs someone's privacy.
 */

export type IdentifierKind = 'mac' | 'uuid' | 'hex' | 'base64';

const PATTERNS: ReadonlyArray<readonly [IdentifierKind, RegExp]> = [
  ['uuid', /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i],
  // Six hex pairs joined by one repeated separator of any kind, or by none (aa:bb:…, aa-bb-…, aabbcc…).
  ['mac', /(?<![0-9a-f])[0-9a-f]{2}([^0-9a-z]?)[0-9a-f]{2}(?:\1[0-9a-f]{2}){4}(?![0-9a-f])/i],
  // Cisco's dotted form, aabb.ccdd.eeff.
  ['mac', /(?<![0-9a-f])[0-9a-f]{4}\.[0-9a-f]{4}\.[0-9a-f]{4}(?![0-9a-f])/i],
  // A hash or key in hex: 16 hex characters or more in a row.
  ['hex', /[0-9a-f]{16,}/i],
];

/**
 * Base64 of 16 bytes or more: a long run that is padded or holds + or /, or a long unbroken alphanumeric
 * stretch mixing both cases with several digits (names people choose break at words, or lack digits).
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
 * identifierKind('lobby'); // null
 */
export function identifierKind(s: string): IdentifierKind | null {
  for (const [kind, pattern] of PATTERNS) if (pattern.test(s)) return kind;
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

const REDACTIONS: ReadonlyArray<readonly [RegExp, string]> = [
  [/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, '[uuid]'],
  [/(?<![0-9a-f])[0-9a-f]{2}([^0-9a-z]?)[0-9a-f]{2}(?:\1[0-9a-f]{2}){4}(?![0-9a-f])/gi, '[mac]'],
  [/(?<![0-9a-f])[0-9a-f]{4}\.[0-9a-f]{4}\.[0-9a-f]{4}(?![0-9a-f])/gi, '[mac]'],
  [/[0-9a-f]{16,}/gi, '[hex]'],
  // An OID long enough to carry a table index, which for station tables is the station's MAC.
  [/\b\d+(?:\.\d+){12,}\b/g, '[oid]'],
];

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
