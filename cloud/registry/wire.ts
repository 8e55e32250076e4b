/**
 * Registry's wire. JSON uses exactly the seed's field names (`ID, Name, DisplayName, Tier, Host,
 * IdentityMode, Issuer, LicenseStatus, Status, StatusDetail, created_at`); input keys match
 * case-insensitively, so `name`, `NAME` and `Name` are one key, and a key may be given once only, in
 * any spelling.
 */
import * as t from 'io-ts';
import { HttpError, reportedProblems, unknownKeyProblems } from '../../shared/errors.js';
import { CONTROL_CHARACTERS, decode, isName, NAME_EXPECTATION, NonEmptyString, storableText } from '../../shared/kinds.js';
import { topLevelKeys } from './json-keys.js';
import { canonicalName, invisibleCharacterIn, isBlankName } from './name.js';
import type { Organization, Signup } from './model.js';
import { IDENTITY_MODES, TIERS } from './model.js';

function oneOf<const V extends readonly string[]>(values: V): t.Type<V[number], V[number], unknown> {
  const accept = (u: unknown): u is V[number] => typeof u === 'string' && values.includes(u);
  return new t.Type<V[number], V[number], unknown>(
    `one of ${values.map((v) => JSON.stringify(v)).join(', ')}`,
    accept,
    (u, c) => (accept(u) ? t.success(u) : t.failure(u, c)),
    t.identity,
  );
}

const MAX_TEXT = 256;
/**
 * Characters of a status detail kept: a longer one (a provisioner's whole error output) is stored cut
 * there, ending in `…`, rather than refused: the seed refuses a report for its status, and a failure
 * that could not be recorded would leave the organization provisioning for good.
 */
export const MAX_DETAIL = 4096;

/**
 * A string codec; every stored string refuses NUL, which a PostgreSQL text column cannot hold, and an
 * unpaired surrogate, which would be stored as U+FFFD instead of what was sent.
 */
function storedString(description: string, accept: (s: string) => boolean): t.Type<string, string, unknown> {
  const is = (u: unknown): u is string => typeof u === 'string' && storableText(u) && accept(u);
  return new t.Type<string, string, unknown>(
    `${description}, without NUL (\\u0000) or unpaired surrogates`,
    is,
    (u, c) => (is(u) ? t.success(u) : t.failure(u, c)),
    t.identity,
  );
}

/**
 * Identifiers (the unique Name, the Issuer a token's `iss` is compared with) refuse every control
 * character, as ids do everywhere in Lintel: they are matched, logged and copied into other systems.
 * DisplayName and the status detail are free text and only refuse what cannot be stored.
 */
const Name = NonEmptyString;
const Issuer = storedString(
  `a string of at most ${MAX_TEXT} characters without control characters (C0, DEL, C1, U+2028, U+2029)`,
  (s) => s.length <= MAX_TEXT && !CONTROL_CHARACTERS.test(s),
);
const Text = storedString(`a string of at most ${MAX_TEXT} characters`, (s) => s.length <= MAX_TEXT);
/** Any text: what cannot be stored as sent is replaced where it stands ({@link keptDetail}). */
const Detail = t.union([t.string, t.null]);

export const SignupBody = t.intersection([
  t.type({ Name, Tier: oneOf(TIERS) }),
  t.partial({ DisplayName: Text, IdentityMode: oneOf(IDENTITY_MODES), Issuer }),
]);
const SIGNUP_KEYS = ['Name', 'DisplayName', 'Tier', 'IdentityMode', 'Issuer'] as const;

export const StatusBody = t.intersection([t.type({ status: oneOf(['ready', 'failed'] as const) }), t.partial({ detail: Detail })]);
const STATUS_KEYS = ['status', 'detail'] as const;

/**
 * Renames the keys of a body to their canonical spelling, matching case-insensitively. A key given
 * twice (`name` and `Name`, or `Name` and `Name` again) and a key the request does not have are
 * problems, reported with the rest. `written` is the body's keys as its text has them
 * ({@link topLevelKeys}): the parsed body holds only the last of a key spelled the same way twice.
 *
 * @example
 * canonicalKeys({ name: 'acme', TIER: 'pooled' }, ['Name', 'Tier']); // { value: { Name: 'acme', Tier: 'pooled' }, problems: [] }
 * canonicalKeys({ Name: 'evil' }, ['Name'], ['Name', 'Name']); // problems: ['Name: given twice']
 */
export function canonicalKeys(
  body: unknown,
  keys: readonly string[],
  written?: readonly string[],
): { value: Record<string, unknown>; problems: string[]; notListed: number } {
  if (body === undefined) return { value: {}, problems: [], notListed: 0 };
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return { value: {}, problems: ['request body: expected a JSON object'], notListed: 0 };
  const fields = body as Record<string, unknown>;
  const byLower = new Map(keys.map((k) => [k.toLowerCase(), k]));
  const value: Record<string, unknown> = {};
  const seen = new Map<string, string>();
  const problems: string[] = [];
  const repeated = new Set<string>();
  const unknown = new Set<string>();
  for (const given of written ?? Object.keys(fields)) {
    const canonical = byLower.get(given.toLowerCase());
    if (canonical === undefined) {
      unknown.add(given);
      continue;
    }
    const earlier = seen.get(canonical);
    if (earlier !== undefined) {
      if (!repeated.has(canonical)) problems.push(`${canonical}: given twice${earlier === given ? '' : ` (as ${earlier} and ${given})`}`);
      repeated.add(canonical);
      continue;
    }
    seen.set(canonical, given);
    value[canonical] = fields[given];
  }
  const unknownKeys = unknownKeyProblems([...unknown], (key) => `${key}: not a field of this request (expected ${keys.join(', ')})`);
  problems.push(...unknownKeys.problems);
  return { value, problems, notListed: unknownKeys.notListed };
}

/** `text` is the body as sent (undefined when none was read), where a key spelled the same way twice still shows. */
function parse<A>(codec: t.Type<A, unknown, unknown>, keys: readonly string[], body: unknown, text: string | undefined): A {
  const { value, problems, notListed } = canonicalKeys(body, keys, text === undefined ? undefined : topLevelKeys(text));
  const decoded = decode(codec, value);
  const errors = reportedProblems([...(decoded.ok ? [] : decoded.errors), ...problems], notListed);
  if (!decoded.ok || errors.length > 0) throw new HttpError(400, errors.join('; '), { errors });
  return decoded.value;
}

/**
 * `http://` or `https://`, a host, and no whitespace or backslash anywhere. The WHATWG URL parser
 * silently repairs all of those (and a missing or extra slash), but the Issuer is compared as sent with
 * a token's `iss`, which a repaired spelling can never equal.
 */
const WRITTEN_OUT_HTTP_URL = /^https?:\/\/[^/\\\s][^\\\s]*$/i;

function isHttpUrl(value: string): boolean {
  if (!WRITTEN_OUT_HTTP_URL.test(value)) return false;
  try {
    const u = new URL(value);
    return u.protocol === 'https:' || u.protocol === 'http:';
  } catch {
    return false;
  }
}

/**
 * What is wrong with a Name that is not blank, `name` in its canonical form and `given` as sent.
 * Invisible characters are looked for before white space is collapsed too: JavaScript counts U+FEFF
 * (the byte order mark) as white space, which would make a space of it.
 */
function nameProblems(name: string, given: string): string[] {
  const problems: string[] = [];
  // Compatibility forms can expand (U+FDFA is 18 letters): the canonical name is held to the same rules.
  if (!isName(name)) problems.push(`Name: expected ${NAME_EXPECTATION}, once in its canonical form (NFKC)`);
  const invisible = invisibleCharacterIn(name) ?? invisibleCharacterIn(given.normalize('NFKC'));
  if (invisible !== undefined) problems.push(`Name: must not hold invisible characters (soft hyphen, zero-width space or joiner, word joiner, bidi controls, variation selectors, fillers, …), got ${invisible}`);
  return problems;
}

/** Reads a signup body (parsed, and its text as sent), or throws a 400 naming every problem. */
export function parseSignup(body: unknown, text: string | undefined): Signup {
  const input = parse(SignupBody, SIGNUP_KEYS, body, text);
  const identityMode = input.IdentityMode ?? 'platform';
  const issuer = input.Issuer ?? '';
  const name = canonicalName(input.Name);
  const problems: string[] = [];
  if (isBlankName(name)) problems.push('Name: expected a name, got only white space or invisible characters');
  else problems.push(...nameProblems(name, input.Name));
  if (identityMode === 'byo-idp' && issuer === '') problems.push('Issuer: required when IdentityMode is "byo-idp" (the URL of your identity provider)');
  if (issuer !== '' && !isHttpUrl(issuer)) problems.push(`Issuer: expected an http(s) URL written out in full (http:// or https://, then the host), without spaces or backslashes, got ${JSON.stringify(issuer.slice(0, 40))}`);
  if (problems.length > 0) throw new HttpError(400, problems.join('; '), { errors: problems });
  return { name, displayName: input.DisplayName ?? '', tier: input.Tier, identityMode, issuer };
}

/** Reads a status report `{status, detail}` (parsed, and its text as sent); anything but ready or failed is a 400. */
export function parseStatusReport(body: unknown, text: string | undefined): { status: 'ready' | 'failed'; detail: string | null } {
  const input = parse(StatusBody, STATUS_KEYS, body, text);
  return { status: input.status, detail: input.detail == null ? null : keptDetail(input.detail) };
}

/**
 * A status detail as stored: a NUL (which a text column cannot hold) and an unpaired surrogate (a
 * provisioner's output cut in the middle of a character) become U+FFFD, and at most {@link MAX_DETAIL}
 * characters are kept (code points, so no surrogate pair is split), a longer detail cut and ending in
 * `…`. A detail that is text never makes a report refused.
 *
 * @example
 * keptDetail('x'.repeat(5000)).length; // 4096
 * keptDetail('disk\u0000full'); // 'disk\ufffdfull'
 */
function keptDetail(raw: string): string {
  const detail = storableText(raw) ? raw : raw.replaceAll('\u0000', '\ufffd').replace(/\p{Cs}/gu, '\ufffd');
  if (detail.length <= MAX_DETAIL) return detail;
  const points = Array.from(detail);
  return points.length <= MAX_DETAIL ? detail : `${points.slice(0, MAX_DETAIL - 1).join('')}…`;
}

/** The organization as JSON, every field present, named exactly as the seed names them. */
export function organizationJson(org: Organization): Record<string, unknown> {
  return {
    ID: org.id,
    Name: org.name,
    DisplayName: org.displayName,
    Tier: org.tier,
    Host: org.host,
    IdentityMode: org.identityMode,
    Issuer: org.issuer,
    LicenseStatus: org.licenseStatus,
    Status: org.status,
    StatusDetail: org.statusDetail,
    created_at: org.createdAt.toISOString(),
  };
}
