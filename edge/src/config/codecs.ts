/**
 * io-ts building blocks for the gateway config: closed objects (an unknown key is an error that says what
 * to write instead), and value kinds whose names read as the expectation in `path: expected X, got Y`.
 */
import { isIP } from 'node:net';
import * as t from 'io-ts';
import { IDENTIFIER_WORDS, identifierKind } from '../report/identifiers.js';
import { INTERFACE_NAME, interfaceNames } from '../poll/interfaces.js';
import { KEY_ID } from '../../../shared/hmac.js';

/** `accessPoints[2].snmp`: the keys of a context, skipping union and intersection member indexes. */
export function pathOf(context: t.Context): string {
  let out = '';
  for (let i = 1; i < context.length; i++) {
    const parent = context[i - 1]?.type as unknown as { _tag?: string };
    const key = context[i]?.key ?? '';
    if (key === '' || parent._tag === 'UnionType' || parent._tag === 'IntersectionType') continue;
    if (parent._tag === 'ArrayType' || parent._tag === 'ReadonlyArrayType') out += `[${key}]`;
    else out += out ? `.${key}` : key;
  }
  return out || '(root)';
}

/** What to say about a key that is not accepted: a replacement, or why it is refused. */
export type KeyAdvice = Readonly<Record<string, string>>;

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === 'object' && u !== null && !Array.isArray(u);

type Shape<R extends t.Props, O extends t.Props> = { [K in keyof R]: t.TypeOf<R[K]> } & { [K in keyof O]?: t.TypeOf<O[K]> };

/**
 * An object codec with required and optional keys that refuses any other key. `advice` maps refused keys
 * to a message (e.g. an inline secret: "put it in a file and set communityFile"). The refused value is
 * never echoed, since it may be a secret. Decoding returns only the declared keys.
 */
export function closed<R extends t.Props, O extends t.Props>(name: string, required: R, optional: O, advice: KeyAdvice = {}) {
  const allowed = [...Object.keys(required), ...Object.keys(optional)];
  const is = (u: unknown): u is Shape<R, O> =>
    isRecord(u) &&
    Object.keys(u).every((k) => allowed.includes(k)) &&
    Object.entries(required).every(([k, c]) => c.is(u[k])) &&
    Object.entries(optional).every(([k, c]) => u[k] === undefined || c.is(u[k]));
  return new t.Type<Shape<R, O>, Shape<R, O>, unknown>(
    name,
    is,
    (input, context) => {
      if (!isRecord(input)) return t.failure(input, context);
      const errors: t.ValidationError[] = [];
      const out: Record<string, unknown> = {};
      const field = (key: string, codec: t.Mixed) => {
        const result = codec.validate(input[key], t.appendContext(context, key, codec, input[key]));
        if (result._tag === 'Left') errors.push(...result.left);
        else out[key] = result.right;
      };
      for (const [key, codec] of Object.entries(required)) field(key, codec);
      for (const [key, codec] of Object.entries(optional)) if (input[key] !== undefined) field(key, codec);
      for (const key of Object.keys(input)) {
        if (allowed.includes(key)) continue;
        const at = pathOf(context);
        const message = advice[key] ?? `unknown key; expected one of ${allowed.join(', ')}`;
        errors.push({ value: undefined, context, message: `${at === '(root)' ? '' : `${at}.`}${key}: ${message}` });
      }
      return errors.length > 0 ? t.failures(errors) : t.success(out as Shape<R, O>);
    },
    t.identity,
  );
}

/** A codec that can say why it refuses a value (e.g. "it looks like a MAC"), beyond what it expects. */
export interface Explains {
  refusalOf?: (u: unknown) => string | undefined;
}

/**
 * A map whose keys must pass `key`. io-ts's own `t.record` drops a key its domain refuses without a word,
 * so a zone id like `lobby/east` would vanish from the config; here it is an error with its path.
 */
export function mapOf<V>(name: string, key: t.Type<string, string, unknown> & Explains, value: t.Type<V, V, unknown>) {
  return new t.Type<Record<string, V>, Record<string, V>, unknown>(
    name,
    (u): u is Record<string, V> => isRecord(u) && Object.entries(u).every(([k, v]) => key.is(k) && value.is(v)),
    (input, context) => {
      if (!isRecord(input)) return t.failure(input, context);
      const errors: t.ValidationError[] = [];
      const out: Record<string, V> = {};
      for (const [k, v] of Object.entries(input)) {
        if (!key.is(k)) {
          const at = pathOf(context);
          const why = key.refusalOf?.(k);
          errors.push({ value: undefined, context, message: `${at === '(root)' ? '' : `${at}.`}${k === '' ? '""' : k}: not accepted as a key; ${why ? `${why}; ` : ''}expected ${key.name}` });
          continue;
        }
        const result = value.validate(v, t.appendContext(context, k, value, v));
        if (result._tag === 'Left') errors.push(...result.left);
        else out[k] = result.right;
      }
      return errors.length > 0 ? t.failures(errors) : t.success(out);
    },
    t.identity,
  );
}

/** `codec`, where an empty YAML value (null) stands for `{}`. */
export function emptyAllowed<A>(codec: t.Type<A, A, unknown>) {
  return new t.Type<A, A, unknown>(codec.name, codec.is, (u, c) => codec.validate(u === null ? {} : u, c), t.identity);
}

/** A refinement with a readable expectation as its name. */
function kind<A>(name: string, base: t.Type<A, A, unknown>, ok: (a: A) => boolean) {
  return new t.Type<A, A, unknown>(
    name,
    (u): u is A => base.is(u) && ok(u),
    (u, c) => (base.is(u) && ok(u) ? t.success(u) : t.failure(u, c)),
    t.identity,
  );
}

export const PositiveSeconds = kind('a positive number of seconds', t.number, (n) => Number.isFinite(n) && n > 0);
/**
 * Seconds that become a timer: at least 1 ms (less rounds to 0 ms), and at most 2^31-1 ms, past which
 * Node fires the timer after 1 ms, so a poll would run back to back or time out at once.
 */
export const TimerSeconds = kind('a number of seconds from 0.001 to 2147483', t.number, (n) => Number.isFinite(n) && n >= 0.001 && n <= 2_147_483);
export const PositiveInt = kind('a positive integer', t.number, (n) => Number.isSafeInteger(n) && n >= 1);
export const NonNegativeNumber = kind('a number of dB, 0 or more', t.number, (n) => Number.isFinite(n) && n >= 0);

const DEVICES_PER_PERSON = 'a number of devices per person, 1 or more (e.g. 1.5)';
const isDevicesPerPerson = (u: unknown): u is number => typeof u === 'number' && Number.isFinite(u) && u >= 1;
/**
 * A zone's devices per person, 1 or more. People are its devices divided by it, rounded up so that one
 * device is one person; that holds only from 1 up. Below it a lone device reads as several people (0.2:
 * 5), a count the cloud's privacy floor keeps unsuppressed in the hourly buckets it keeps forever while
 * the same zone's device count is suppressed, and the device count can be read back from it.
 */
export const DevicesPerPerson = new t.Type<number, number, unknown>(
  DEVICES_PER_PERSON,
  isDevicesPerPerson,
  (u, c) => {
    if (isDevicesPerPerson(u)) return t.success(u);
    if (typeof u !== 'number' || !(u > 0 && u < 1)) return t.failure(u, c);
    return t.failure(
      u,
      c,
      `${pathOf(c)}: expected ${DEVICES_PER_PERSON}, got ${u}; below 1, one device would be reported as more than one person, ` +
        "past the cloud's privacy floor, and the device count could be read back from the estimate",
    );
  },
  t.identity,
);

export const Port = kind('a port number (1-65535)', t.number, (n) => Number.isInteger(n) && n >= 1 && n <= 65535);
export const NonEmptyText = kind('a non-empty string', t.string, (s) => s.trim().length > 0);
export const FilePath = kind('a file path', t.string, (s) => s.trim().length > 0 && !s.includes('\0'));
/** The interfaces an SSH dialect's command runs for: plain names, comma-separated (the command runs in the AP's shell). */
export const InterfaceList = kind('interface names, comma-separated, each of 1 to 32 letters, digits, _ . @ or -', t.string, (s) => {
  const names = interfaceNames(s);
  return names.length > 0 && names.every((name) => INTERFACE_NAME.test(name));
});

/** The longest file name (path component) Linux file systems take, in bytes: NAME_MAX. */
const NAME_MAX = 255;

/**
 * Why a string is no path to a secret file but may be the secret itself, or undefined. YAML folds a
 * multi-line plain value into one line, so a PEM key pasted in place of its path arrives without line
 * breaks: it is found by its armour line, or by a run longer than any file name.
 */
function secretInPlaceOfPath(s: string): string | undefined {
  if (/[\r\n]/.test(s)) return 'a multi-line value (the secret itself?)';
  if (s.includes('-----BEGIN')) return 'a value holding "-----BEGIN" (a PEM key, pasted in place of its path?)';
  if (s.split('/').some((name) => Buffer.byteLength(name) > NAME_MAX)) return `a value with a part longer than ${NAME_MAX} bytes, which no file name is (the secret itself?)`;
  if (s.includes('\0')) return 'a value that holds NUL';
  return undefined;
}

/**
 * The path of a file holding a secret. A value that is refused is never echoed, since error lines reach
 * the journal and the value may be the secret written in place of its path: a line break, or a PEM
 * armour line or a run longer than any file name (a key YAML folded onto one line), a number, a NUL.
 * Only a missing or blank value, which holds nothing, is described as it is.
 */
export const SecretFilePath = new t.Type<string, string, unknown>(
  'a file path',
  (u): u is string => FilePath.is(u) && secretInPlaceOfPath(u) === undefined,
  (u, c) => {
    if (FilePath.is(u) && secretInPlaceOfPath(u) === undefined) return t.success(u);
    if (u === undefined || u === null || (typeof u === 'string' && u.trim() === '')) return FilePath.validate(u, c);
    const got = typeof u !== 'string' ? `a ${Array.isArray(u) ? 'list' : typeof u}` : secretInPlaceOfPath(u);
    return t.failure(u, c, `${pathOf(c)}: expected a path to the file holding the secret, got ${got}; it is not shown. Put the secret in a file (mode 600) and give that file's path`);
  },
  t.identity,
);

const HOST_LABEL = /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
/** A DNS name or an IPv4/IPv6 address. */
export const Hostname = kind('a hostname', t.string, (s) => isIP(s) !== 0 || (s.length <= 253 && s.replace(/\.$/, '').split('.').every((l) => HOST_LABEL.test(l))));

/** The id of the gateway's ingest key (`X-Key-Id`), by the rule telemetry issues and looks keys up by. */
export const IngestKeyId = kind('a key id of 1 to 128 letters, digits, dots, underscores, colons or dashes', t.string, (s) => KEY_ID.test(s));

const NAME = /^[A-Za-z0-9][A-Za-z0-9 ._-]{0,127}$/;
/** Why a name is refused as an identifier ("it looks like an IP address"), or undefined. */
const identifierRefusal = (u: unknown): string | undefined => {
  const found = typeof u === 'string' ? identifierKind(u) : null;
  return found ? `it looks like ${IDENTIFIER_WORDS[found]}` : undefined;
};
/**
 * A name that is sent off the gateway (building, zone, AP): letters, digits, space, dot, dash,
 * underscore. It must not look like an identifier (MAC, UUID, hash, base64, IP address, local host name:
 * whatever report/identifiers.ts detects), so `ledger audit` can prove every exported value is an
 * aggregate. A refusal names the kind it found.
 */
export const ExportedName: t.Type<string, string, unknown> & Explains = Object.assign(
  new t.Type<string, string, unknown>(
    'a name of letters, digits, spaces, dots, dashes or underscores (at most 128) that does not look like an identifier (a MAC, UUID, hash, base64, IP address or local host name)',
    (u): u is string => typeof u === 'string' && NAME.test(u) && identifierKind(u) === null,
    (u, c) => {
      const why = identifierRefusal(u);
      if (why) return t.failure(u, c, `${pathOf(c)}: expected ${ExportedName.name}, got ${JSON.stringify(u)}: ${why}`);
      return typeof u === 'string' && NAME.test(u) ? t.success(u) : t.failure(u, c);
    },
    t.identity,
  ),
  { refusalOf: identifierRefusal },
);

const httpUrlOf = (s: string): URL | undefined => {
  try {
    const url = new URL(s);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : undefined;
  } catch {
    return undefined;
  }
};

/**
 * An http:// or https:// URL without a user or password; with `base`, also without a query or fragment.
 * Error lines reach the journal, so nothing that may hold a password is echoed: a URL with a user or
 * password is refused for that reason alone, and a value that is not a URL is shown only when it holds
 * no "@" (a typo such as `htps://admin:hunter2@10.0.4.21` is described, not shown).
 */
function httpUrl(base: boolean) {
  const expected = 'an http:// or https:// URL';
  /** undefined: accepted; null: refused, and safe to show as formatErrors does; else what follows "expected …". */
  const refusalOf = (u: unknown): string | null | undefined => {
    const url = typeof u === 'string' ? httpUrlOf(u) : undefined;
    if (url === undefined) return typeof u === 'string' && u.includes('@') ? ', got a value that is not one and holds "@" (not shown: it may hold a password)' : null;
    if (url.username !== '' || url.password !== '') return ' without a user or password, got one with them (not shown: a password is a secret)';
    // The device adapter appends the binding path to the endpoint's path and keeps nothing else.
    if (base && (url.search !== '' || url.hash !== '')) {
      return " without a query or fragment (the binding path is appended to the endpoint's path, and a query or fragment would be dropped), got one with them";
    }
    return undefined;
  };
  return new t.Type<string, string, unknown>(
    expected,
    (u): u is string => refusalOf(u) === undefined,
    (u, c) => {
      const refusal = refusalOf(u);
      if (refusal === undefined) return t.success(u as string);
      return refusal === null ? t.failure(u, c) : t.failure(u, c, `${pathOf(c)}: expected ${expected}${refusal}`);
    },
    t.identity,
  );
}

/** Where the gateway posts its batches (ingest.url). */
export const HttpUrl = httpUrl(false);

/** A device's base URL (sensors[].endpoint): the binding path of each action is appended to it. */
export const EndpointUrl = httpUrl(true);

/** `host:port` for a local listener, e.g. 127.0.0.1:9464. */
export const ListenAddress = kind('an address as host:port, e.g. 127.0.0.1:9464', t.string, (s) => {
  const m = /^(\[[0-9a-fA-F:]+\]|[^:]+):(\d+)$/.exec(s);
  if (!m) return false;
  const port = Number(m[2]);
  return port >= 0 && port <= 65535 && Hostname.is(m[1]!.replace(/^\[|\]$/g, ''));
});

/** A SHA-256 host key fingerprint, as `ssh-keygen -l` prints it (the `SHA256:` prefix is optional). */
export const HostKeySha256 = kind('a SHA-256 host key fingerprint (43 base64 characters, as ssh-keygen -l prints)', t.string, (s) =>
  /^(SHA256:)?[A-Za-z0-9+/]{43}=?$/.test(s),
);

export const LogLevel = t.keyof({ fatal: null, error: null, warn: null, info: null, debug: null, trace: null, silent: null }, 'one of fatal, error, warn, info, debug, trace, silent');

/** YAML reads `3` as a number and `2c` as a string; both spellings are accepted. */
export const SnmpVersion = new t.Type<'2c' | '3', '2c' | '3', unknown>(
  'an SNMP version: 2c or 3',
  (u): u is '2c' | '3' => u === '2c' || u === '3',
  (u, c) => (u === '2c' || u === '3' ? t.success(u) : u === 3 ? t.success('3') : t.failure(u, c)),
  t.identity,
);
