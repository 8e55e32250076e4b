/**
 * Request bodies of the HTTP routes, validated once at the boundary. Every problem is reported with its
 * path. `domainId` is accepted as a deprecated alias of `domainName`; an account name or user id in a
 * body is never read (the account always comes from the claims). Lists and objects longer than they can
 * meaningfully be are refused before their elements are checked, so a large body cannot turn into a far
 * larger list of problems.
 */
import { ECDH } from 'node:crypto';
import * as t from 'io-ts';
import { ALERTABLE_METRICS } from '../../shared/catalog/metrics.js';
import { CONTROL_CHARACTERS, LONE_SURROGATE, NonEmptyString, decode, describeValue } from '../../shared/kinds.js';
import { Severity } from '../../shared/notification.js';
import { privateIpLiteral, pushSchemeAllowed } from './destinations.js';
import type { PreferenceChange } from './preferences.js';

export type Parsed<T> = { ok: true; value: T } | { ok: false; errors: string[] };

/** A browser's PushSubscription JSON. */
export interface DeviceSubscription {
  /** Its URL's href without the fragment (see {@link endpointHref}): what is stored, compared and pushed to. */
  endpoint: string;
  keys: { p256dh: string; auth: string };
}

export interface SubscribeRequest {
  subscription: DeviceSubscription;
  domainName?: string;
  /** The alertable metrics to switch on; every alertable metric when absent. */
  types: string[];
}

export interface PreferencesRequest {
  domainName: string;
  changes: PreferenceChange[];
}

export interface TriggerRequest {
  buildingId: string;
  severity: Severity;
  title: string;
  message: string;
}

/** Which push endpoints /subscribe accepts. */
export interface EndpointPolicy {
  /** Accept `http:` endpoints (local push services); `https:` only otherwise. */
  allowHttp: boolean;
  /** Accept endpoints whose host is a private IP literal (loopback, RFC 1918, link-local, …). */
  allowPrivateDestinations: boolean;
}

/** Longest endpoint, as sent and as its {@link endpointHref}: well within FerretDB's unique index on it. */
export const MAX_ENDPOINT_LENGTH = 2048;
const MAX_TITLE_LENGTH = 200;
const MAX_MESSAGE_LENGTH = 2000;
/** Keys of any one object in a body; the routes read a handful, the rest are ignored. */
export const MAX_KEYS = 32;
/**
 * Entries of a `preferences` list. A later entry for a type replaces an earlier one, so a list may
 * repeat a type, but not without bound: its problems must stay readable.
 */
export const MAX_PREFERENCE_ENTRIES = 32;

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The problem when an object has more keys than any route reads. */
function tooManyKeys(value: Record<string, unknown>, path: string): string | undefined {
  const count = Object.keys(value).length;
  return count > MAX_KEYS ? `${path}: expected an object with at most ${MAX_KEYS} keys, got ${count} keys` : undefined;
}

/** A non-empty list of at most `max` elements, or undefined with the problem added to `errors`. */
function listAt(value: unknown, path: string, max: number, what: string, errors: string[]): unknown[] | undefined {
  if (!Array.isArray(value) || value.length === 0) {
    errors.push(`${path}: expected a non-empty list of ${what}, got ${describeValue(value)}`);
    return undefined;
  }
  if (value.length > max) {
    errors.push(`${path}: expected a list of at most ${max} ${what}, got ${value.length} elements`);
    return undefined;
  }
  return value;
}

/** A `types` list: each alertable metric once is as long as it can meaningfully be. */
function typesAt(value: unknown, errors: string[]): unknown[] | undefined {
  return listAt(value, 'types', ALERTABLE_METRICS.length, `alertable metrics (${ALERTABLE_METRICS.join(', ')})`, errors);
}

/** True for an uncompressed P-256 public key: 65 bytes, 0x04, then a point on the curve. */
function isP256PublicKey(bytes: Buffer): boolean {
  if (bytes.length !== 65 || bytes[0] !== 4) return false;
  try {
    // Throws for coordinates off the curve, which no push could ever be encrypted for.
    ECDH.convertKey(bytes, 'prime256v1');
    return true;
  } catch {
    return false;
  }
}

function base64UrlBytes(value: string): number | undefined {
  if (!/^[A-Za-z0-9_-]+={0,2}$/.test(value)) return undefined;
  return Buffer.from(value.replace(/=+$/, ''), 'base64url').length;
}

/**
 * The domain a body names: `domainName`, or its deprecated alias `domainId`. Both given and different
 * is an error, since either could be what the caller meant.
 */
function domainOf(body: Record<string, unknown>, errors: string[], required: boolean): string | undefined {
  const check = (key: 'domainName' | 'domainId'): string | undefined => {
    const value = body[key];
    if (value === undefined) return undefined;
    const decoded = decode(NonEmptyString, value, key);
    if (!decoded.ok) {
      errors.push(...decoded.errors);
      return undefined;
    }
    return decoded.value;
  };
  const name = check('domainName');
  const alias = check('domainId');
  if (name !== undefined && alias !== undefined && name !== alias) {
    errors.push(`domainId: deprecated alias of domainName, and it disagrees with domainName (${describeValue(alias)} vs ${describeValue(name)})`);
  }
  const domain = name ?? alias;
  if (domain === undefined && required && body.domainName === undefined && body.domainId === undefined) {
    errors.push('domainName: required, got nothing');
  }
  return domain;
}

function alertableType(value: unknown, path: string, errors: string[]): string | undefined {
  if (typeof value === 'string' && ALERTABLE_METRICS.includes(value)) return value;
  errors.push(`${path}: expected an alertable metric (one of ${ALERTABLE_METRICS.join(', ')}), got ${describeValue(value)}`);
  return undefined;
}

function booleanAt(body: Record<string, unknown>, key: string, path: string, errors: string[]): boolean | undefined {
  const value = body[key];
  if (typeof value === 'boolean') return value;
  errors.push(`${path}: expected a boolean, got ${describeValue(value)}`);
  return undefined;
}

/**
 * The one spelling of a push endpoint: its URL's href (host lower-cased and in punycode, default port
 * dropped, non-ASCII percent-encoded as UTF-8) without the fragment, which never reaches the push
 * service. The unique index on `endpoint` holds this form, so `https://FCM.googleapis.com:443/x` cannot
 * register under a second account the subscription `https://fcm.googleapis.com/x` already is.
 *
 * @example
 * endpointHref(new URL('https://FCM.googleapis.com:443/fcm/send/abc#x')) // 'https://fcm.googleapis.com/fcm/send/abc'
 */
export function endpointHref(url: URL): string {
  const href = url.href;
  const fragment = href.indexOf('#');
  return fragment < 0 ? href : href.slice(0, fragment);
}

/**
 * The endpoint's problem, or its {@link endpointHref}. Control characters and lone surrogates are
 * refused rather than left to the URL parser, which drops tabs and line breaks anywhere and other
 * control characters at either end (so the string would name another endpoint than it shows), and
 * encodes a lone surrogate as U+FFFD (so two strings would name one endpoint).
 */
function endpointAt(value: unknown, options: EndpointPolicy, path: string): { href: string } | { problem: string } {
  if (typeof value !== 'string' || value.length > MAX_ENDPOINT_LENGTH) {
    return { problem: `${path}: expected a URL of at most ${MAX_ENDPOINT_LENGTH} characters, got ${describeValue(value)}` };
  }
  if (CONTROL_CHARACTERS.test(value) || LONE_SURROGATE.test(value)) {
    return { problem: `${path}: expected a URL without control characters (NUL, tab, line breaks, …) or lone surrogates, got ${describeValue(value)}` };
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return { problem: `${path}: expected an absolute URL, got ${describeValue(value)}` };
  }
  const privateAddress = options.allowPrivateDestinations ? undefined : privateIpLiteral(url.hostname);
  if (!pushSchemeAllowed(url.protocol, options.allowHttp) || url.username !== '' || url.password !== '') {
    return { problem: `${path}: expected an ${options.allowHttp ? 'http or https' : 'https'} URL without credentials, got ${describeValue(value)}` };
  }
  if (privateAddress !== undefined) {
    return { problem: `${path}: expected a push service on a public address, got the private address ${privateAddress} (loopback, private network, link-local and unique-local addresses are refused)` };
  }
  const href = endpointHref(url);
  if (href.length > MAX_ENDPOINT_LENGTH) {
    return { problem: `${path}: expected a URL of at most ${MAX_ENDPOINT_LENGTH} characters once normalised (a non-ASCII character is percent-encoded, up to 12 characters each), got ${href.length} characters` };
  }
  return { href };
}

/**
 * Checks a device subscription as a push service will use it: an absolute http(s) endpoint, a P-256
 * public key (65 bytes, uncompressed, on the curve) and a 16-byte auth secret, both base64url. An endpoint whose host
 * is a private IP literal is refused here already; a host name is checked when a push connects. The
 * endpoint answered is its {@link endpointHref}.
 */
export function parseDeviceSubscription(value: unknown, options: EndpointPolicy, path = 'subscription'): Parsed<DeviceSubscription> {
  const errors: string[] = [];
  if (!isObject(value)) return { ok: false, errors: [`${path}: expected an object with endpoint and keys, got ${describeValue(value)}`] };
  const crowded = tooManyKeys(value, path);
  if (crowded !== undefined) return { ok: false, errors: [crowded] };
  const checked = endpointAt(value.endpoint, options, `${path}.endpoint`);
  const endpoint = 'href' in checked ? checked.href : undefined;
  if ('problem' in checked) errors.push(checked.problem);
  const keys = value.keys;
  let p256dh: string | undefined;
  let auth: string | undefined;
  const crowdedKeys = isObject(keys) ? tooManyKeys(keys, `${path}.keys`) : undefined;
  if (!isObject(keys)) {
    errors.push(`${path}.keys: expected an object with p256dh and auth, got ${describeValue(keys)}`);
  } else if (crowdedKeys !== undefined) {
    errors.push(crowdedKeys);
  } else {
    if (typeof keys.p256dh === 'string' && base64UrlBytes(keys.p256dh) === 65 && isP256PublicKey(Buffer.from(keys.p256dh, 'base64url'))) p256dh = keys.p256dh;
    else errors.push(`${path}.keys.p256dh: expected a base64url P-256 public key (65 bytes, a point on the curve), got ${describeValue(keys.p256dh)}`);
    if (typeof keys.auth === 'string' && base64UrlBytes(keys.auth) === 16) auth = keys.auth;
    else errors.push(`${path}.keys.auth: expected a base64url 16-byte auth secret, got ${describeValue(keys.auth)}`);
  }
  if (value.expirationTime !== undefined && value.expirationTime !== null && typeof value.expirationTime !== 'number') {
    errors.push(`${path}.expirationTime: expected a number or null, got ${describeValue(value.expirationTime)}`);
  }
  if (errors.length > 0 || endpoint === undefined || p256dh === undefined || auth === undefined) return { ok: false, errors };
  return { ok: true, value: { endpoint, keys: { p256dh, auth } } };
}

/** POST /subscribe: `{subscription, domainName?, types?}`. */
export function parseSubscribe(body: unknown, options: EndpointPolicy): Parsed<SubscribeRequest> {
  if (!isObject(body)) return { ok: false, errors: ['(root): expected a JSON object'] };
  const crowded = tooManyKeys(body, '(root)');
  if (crowded !== undefined) return { ok: false, errors: [crowded] };
  const errors: string[] = [];
  const subscription = parseDeviceSubscription(body.subscription, options);
  if (!subscription.ok) errors.push(...subscription.errors);
  const domainName = domainOf(body, errors, false);
  let types: string[] = [...ALERTABLE_METRICS];
  if (body.types !== undefined) {
    const named = typesAt(body.types, errors);
    if (named !== undefined) {
      types = [...new Set(named.map((type, i) => alertableType(type, `types[${i}]`, errors)).filter((x): x is string => x !== undefined))];
    }
    if (domainName === undefined && body.domainName === undefined && body.domainId === undefined) {
      errors.push('domainName: required when types are named, got nothing');
    }
  }
  if (errors.length > 0 || !subscription.ok) return { ok: false, errors };
  return { ok: true, value: { subscription: subscription.value, ...(domainName !== undefined ? { domainName } : {}), types } };
}

/**
 * POST /preferences, in one of three forms:
 * `{domainName, type, enabled}`, `{domainName, types: [...], enabled}` or
 * `{domainName, preferences: [{notificationType, isSubscribed}]}`.
 */
export function parsePreferences(body: unknown): Parsed<PreferencesRequest> {
  if (!isObject(body)) return { ok: false, errors: ['(root): expected a JSON object'] };
  const crowded = tooManyKeys(body, '(root)');
  if (crowded !== undefined) return { ok: false, errors: [crowded] };
  const errors: string[] = [];
  const domainName = domainOf(body, errors, true);
  const forms = (['type', 'types', 'preferences'] as const).filter((key) => body[key] !== undefined);
  const changes: PreferenceChange[] = [];
  if (forms.length !== 1) {
    errors.push(
      forms.length === 0
        ? 'type: name the preference with one of type, types or preferences, got none'
        : `${forms.join(', ')}: give exactly one of type, types or preferences`,
    );
  } else if (forms[0] === 'type') {
    const type = alertableType(body.type, 'type', errors);
    const enabled = booleanAt(body, 'enabled', 'enabled', errors);
    if (type !== undefined && enabled !== undefined) changes.push({ notificationType: type, isSubscribed: enabled });
  } else if (forms[0] === 'types') {
    const enabled = booleanAt(body, 'enabled', 'enabled', errors);
    typesAt(body.types, errors)?.forEach((value, i) => {
      const type = alertableType(value, `types[${i}]`, errors);
      if (type !== undefined && enabled !== undefined) changes.push({ notificationType: type, isSubscribed: enabled });
    });
  } else {
    listAt(body.preferences, 'preferences', MAX_PREFERENCE_ENTRIES, '{notificationType, isSubscribed}', errors)?.forEach((entry: unknown, i) => {
      if (!isObject(entry)) {
        errors.push(`preferences[${i}]: expected an object {notificationType, isSubscribed}, got ${describeValue(entry)}`);
        return;
      }
      const crowdedEntry = tooManyKeys(entry, `preferences[${i}]`);
      if (crowdedEntry !== undefined) {
        errors.push(crowdedEntry);
        return;
      }
      const type = alertableType(entry.notificationType, `preferences[${i}].notificationType`, errors);
      const enabled = booleanAt(entry, 'isSubscribed', `preferences[${i}].isSubscribed`, errors);
      if (type !== undefined && enabled !== undefined) changes.push({ notificationType: type, isSubscribed: enabled });
    });
  }
  if (errors.length > 0 || domainName === undefined) return { ok: false, errors };
  return { ok: true, value: { domainName, changes } };
}

const TriggerBody = t.intersection([
  t.type({ buildingId: NonEmptyString }),
  t.partial({ title: t.string, message: t.string }),
]);

/** POST /trigger: `{buildingId, type?, title?, message?}`; type is a severity, default danger. */
export function parseTrigger(body: unknown): Parsed<TriggerRequest> {
  if (!isObject(body)) return { ok: false, errors: ['(root): expected a JSON object'] };
  const crowded = tooManyKeys(body, '(root)');
  if (crowded !== undefined) return { ok: false, errors: [crowded] };
  const decoded = decode(TriggerBody, body);
  const errors = decoded.ok ? [] : decoded.errors;
  const type = body.type === undefined ? 'danger' : body.type;
  if (!Severity.is(type)) errors.push(`type: expected a severity (info, warning or danger), got ${describeValue(body.type)}`);
  if (typeof body.title === 'string' && body.title.length > MAX_TITLE_LENGTH) errors.push(`title: expected at most ${MAX_TITLE_LENGTH} characters`);
  if (typeof body.message === 'string' && body.message.length > MAX_MESSAGE_LENGTH) errors.push(`message: expected at most ${MAX_MESSAGE_LENGTH} characters`);
  if (!decoded.ok || !Severity.is(type) || errors.length > 0) return { ok: false, errors };
  const { buildingId, title, message } = decoded.value;
  return {
    ok: true,
    value: {
      buildingId,
      severity: type,
      title: title !== undefined && title.trim() !== '' ? title : `Building ${buildingId}`,
      message: message ?? '',
    },
  };
}
