/**
 * Configuration from environment variables, validated once at start. Every problem is reported at once,
 * each naming its variable, e.g. `REDIS_URL: not a redis:// URL`.
 */
import { createRequire } from 'node:module';
import type { MongoClient as MongoClientOfDriver } from 'mongodb';
import { REDACTED, redactUrlPasswords } from './describe-error.js';
import { keyRingFromEnv } from './hmac.js';

/** Thrown by {@link readEnv} with every problem found. */
export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/** How one variable is read: a parser that returns the value or a problem description. */
export interface EnvVar<T> {
  read(raw: string | undefined): { ok: true; value: T } | { ok: false; problem: string };
}

type Spec = Record<string, EnvVar<unknown>>;
export type EnvOf<S extends Spec> = { [K in keyof S]: S[K] extends EnvVar<infer T> ? T : never };

function fallback<T>(raw: string | undefined, def: T | undefined, required: boolean, parse: (s: string) => T | string): { ok: true; value: T } | { ok: false; problem: string } {
  if (raw === undefined || raw === '') {
    if (def !== undefined) return { ok: true, value: def };
    if (!required) return { ok: true, value: undefined as T };
    return { ok: false, problem: 'required but not set' };
  }
  const parsed = parse(raw);
  if (typeof parsed === 'string' && parsed.startsWith('\u0000')) return { ok: false, problem: parsed.slice(1) };
  return { ok: true, value: parsed as T };
}

const problem = (text: string) => `\u0000${text}`;

/** A string; `required` unless a default is given or `optional` is set. */
export function str(options: { default?: string; optional?: boolean } = {}): EnvVar<string> {
  return { read: (raw) => fallback(raw, options.default, !options.optional, (s) => s) };
}

/** The levels a service's logger accepts, quietest last. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** A log level (`LOG_LEVEL`), default info: a misspelt level is a configuration problem, not a crash in the logger. */
export function logLevel(): EnvVar<string> {
  return {
    read: (raw) =>
      fallback<string>(raw?.trim(), 'info', false, (s) =>
        (LOG_LEVELS as readonly string[]).includes(s) ? s : problem(`expected one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(s)}`),
      ),
  };
}

/** An integer within bounds. */
export function int(options: { default?: number; min?: number; max?: number; optional?: boolean } = {}): EnvVar<number> {
  return {
    read: (raw) =>
      fallback<number>(raw, options.default, !options.optional, (s) => {
        const n = Number(s);
        if (!/^-?\d+$/.test(s.trim()) || !Number.isSafeInteger(n)) return problem(`expected an integer, got ${JSON.stringify(s)}`) as unknown as number;
        if (options.min !== undefined && n < options.min) return problem(`expected at least ${options.min}, got ${n}`) as unknown as number;
        if (options.max !== undefined && n > options.max) return problem(`expected at most ${options.max}, got ${n}`) as unknown as number;
        return n;
      }),
  };
}

/** Said without echoing the value: the user info of such a URL is its password, split where it broke. */
const UNENCODED_USER_INFO = 'its user info holds a character that must be percent-encoded (/ ? # @ as %2F %3F %23 %40); the value is not shown';

/**
 * Why a URL's user name or password cannot be percent-decoded, or undefined if both can. Every driver
 * here (ioredis, pg, the MongoDB driver) decodes them with decodeURIComponent as it builds its client, so
 * a lone `%` (`redis://:50%off@cache`) would throw `URI malformed` there, after start, naming nothing.
 * Said without echoing either.
 */
function undecodableUserInfo(username: string, password: string): string | undefined {
  const notDecodable = 'holds a % that is not valid percent-encoding; write a literal % as %25 (the value is not shown)';
  if (!percentDecodable(password)) return `the password ${notDecodable}`;
  if (!percentDecodable(username)) return `the user name ${notDecodable}`;
  return undefined;
}

/**
 * A URL whose scheme is one of `protocols` (without the colon), e.g. `['redis', 'rediss']`. The scheme is
 * returned lowercased and the rest exactly as given: ioredis turns TLS on only for a URL that starts with
 * `rediss://` as written, yet reads the rest of it, password included, whatever the scheme's case, so
 * `REDISS://` would send AUTH in clear.
 *
 * @example
 * readEnv({ REDIS_URL: url(['redis', 'rediss']) }, { REDIS_URL: 'REDISS://:pw@cache:6380/0' }).REDIS_URL; // 'rediss://:pw@cache:6380/0'
 */
export function url(protocols: readonly string[], options: { default?: string; optional?: boolean } = {}): EnvVar<string> {
  return {
    read: (raw) =>
      fallback<string>(raw, options.default, !options.optional, (s) => {
        try {
          const u = new URL(s);
          // `redis:cache:6379` parses too, with no host, and a client would quietly use localhost.
          if (!protocols.includes(u.protocol.replace(/:$/, '')) || !s.slice(u.protocol.length).startsWith('//')) {
            return problem(`not a ${protocols.map((p) => `${p}://`).join(' or ')} URL`);
          }
          // A password holding an unencoded / ? or # ends the authority early: its first part reads as a
          // host or port, the rest as path or query, and the driver would be handed the wrong server.
          if (s.includes('@') && ((u.username === '' && u.password === '') || `${u.pathname}${u.search}${u.hash}`.includes('@'))) {
            return problem(UNENCODED_USER_INFO);
          }
          const undecodable = undecodableUserInfo(u.username, u.password);
          if (undecodable !== undefined) return problem(undecodable);
          // `//` right after as many characters as the scheme has: so they are the scheme, nothing that URL
          // drops (leading blanks, tabs, newlines) was among them, and only its case changes.
          return `${u.protocol}${s.slice(u.protocol.length)}`;
        } catch {
          return problem(`not a ${protocols[0]}:// URL`);
        }
      }),
  };
}

/** `mongodb://[user[:password]@]host[:port][,host[:port]…][/database][?options]`, split. */
const MONGO_URI = /^(mongodb|mongodb\+srv):\/\/(?:([^@/?#]*)@)?([^/?#@]+)(?:\/([^?#]*))?(?:\?[^#]*)?$/;

/**
 * A MongoDB connection string, `mongodb://` (one host or a replica set's seed list,
 * `h1:27017,h2:27017`) or `mongodb+srv://` (one host name, no port). WHATWG URL parsing refuses a seed
 * list, so it is not used here. Once its shape is right, the driver's own parser reads it too (see
 * {@link mongoDriverRefusal}), so a misspelt option (`retryWrite=true`) or a bad value (`tls=yes`) is
 * refused at start, not when the service builds its client.
 */
export function mongoUri(options: { default?: string } = {}): EnvVar<string> {
  return {
    read: (raw) =>
      fallback<string>(raw, options.default, true, (s) => {
        const m = MONGO_URI.exec(s);
        // As for any URL: a password with an unencoded / ? # would be read as hosts and path; never echoed.
        if (s.includes('@') && (m?.[2] === undefined || s.indexOf('@') !== s.lastIndexOf('@'))) {
          return problem(UNENCODED_USER_INFO);
        }
        if (!m) return problem('not a mongodb:// or mongodb+srv:// URL');
        const hosts = (m[3] ?? '').split(',');
        const bad = hosts.find((h) => !/^(\[[0-9A-Fa-f:.]+\]|[^:[\]\s]+)(:\d{1,5})?$/.test(h) || (h.includes(':') && !h.startsWith('[') && !isPort(Number(h.slice(h.lastIndexOf(':') + 1)))));
        if (bad !== undefined) return problem(`not a mongodb:// or mongodb+srv:// URL: ${JSON.stringify(bad)} is not a host[:port]`);
        if (m[1] === 'mongodb+srv' && (hosts.length !== 1 || /:\d+$/.test(hosts[0] ?? ''))) return problem('a mongodb+srv:// URL names one host, without a port');
        const userInfo = m[2] ?? '';
        const colon = userInfo.indexOf(':');
        const [username, password] = colon === -1 ? [userInfo, ''] : [userInfo.slice(0, colon), userInfo.slice(colon + 1)];
        const undecodable = undecodableUserInfo(username, password);
        if (undecodable !== undefined) return problem(undecodable);
        // The database name is read from the path percent-decoded (mongoDatabaseOf): refused here, not at use.
        if (!percentDecodable(m[4] ?? '')) return problem('the database name in the path is not valid percent-encoding (write a literal % as %25)');
        const refusal = mongoDriverRefusal(s, [password, decodeURIComponent(password)]);
        return refusal === undefined ? s : problem(refusal);
      }),
  };
}

/**
 * What the MongoDB driver says against a connection string, or undefined if it takes it. `new
 * MongoClient` parses the string and its options in its constructor and connects only later, so this is
 * the very check each service's client would make. The driver is loaded here, on first use, so the
 * services and the domain code that import this module without reading a MongoDB URI never load it.
 * Its messages name options and their values, and a few quote the whole string: one that holds a
 * `secret` (the password, as written or decoded) is not shown.
 */
function mongoDriverRefusal(uri: string, secrets: readonly string[]): string | undefined {
  const { MongoClient } = createRequire(import.meta.url)('mongodb') as { MongoClient: typeof MongoClientOfDriver };
  try {
    new MongoClient(uri);
    return undefined;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    if (secrets.some((secret) => secret !== '' && message.includes(secret))) return 'the MongoDB driver refuses it (its message is not shown: it would show the password)';
    return `the MongoDB driver refuses it: ${message}`;
  }
}

/**
 * The database a MongoDB connection string names in its path, or undefined.
 *
 * @example
 * mongoDatabaseOf('mongodb://h1:27017,h2:27017/notificationdb?replicaSet=rs0'); // 'notificationdb'
 */
export function mongoDatabaseOf(uri: string): string | undefined {
  const path = MONGO_URI.exec(uri)?.[4];
  return path ? decodeURIComponent(path) : undefined;
}

const isPort = (n: number) => n >= 1 && n <= 65535;

/** Whether `text` is valid percent-encoding, as decodeURIComponent reads it (a lone `%` is not). */
export function percentDecodable(text: string): boolean {
  try {
    decodeURIComponent(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * A broker list as it may be echoed: an entry written `user:password@host:port`, without a scheme, has
 * its user info hidden (with a scheme, {@link readEnv} hides the password as in any URL).
 */
function withoutUserInfo(list: string): string {
  return list
    .split(',')
    .map((entry) => (entry.includes('@') && !entry.includes('://') ? `${REDACTED}${entry.slice(entry.lastIndexOf('@'))}` : entry))
    .join(',');
}

/** A comma-separated list of host:port pairs (Kafka brokers), each port 1 to 65535. */
export function hostPorts(options: { default?: string } = {}): EnvVar<string[]> {
  return {
    read: (raw) =>
      fallback<string[]>(raw, options.default?.split(','), true, (s) => {
        const list = s.split(',').map((x) => x.trim()).filter(Boolean);
        const bad = list.filter((x) => !/^[^\s:]+:\d{1,5}$/.test(x) || !isPort(Number(x.slice(x.lastIndexOf(':') + 1))));
        if (list.length === 0 || bad.length > 0) return problem(`expected host:port[,host:port…], got ${JSON.stringify(withoutUserInfo(s))}`) as unknown as string[];
        return list;
      }),
  };
}

/** A listen address `[host]:port` (Go style, e.g. `:3000`). */
export function listenAddr(options: { default: string }): EnvVar<{ host: string | undefined; port: number }> {
  return {
    read: (raw) => {
      const value = raw === undefined || raw === '' ? options.default : raw;
      const m = /^(.*):(\d{1,5})$/.exec(value);
      // An IPv6 host is bracketed, as in Go (`[::1]:3000`); Node listens on the address without them.
      const host = m?.[1]?.replace(/^\[(.+)\]$/, '$1');
      if (!m || Number(m[2]) > 65535 || host === '[]') return { ok: false, problem: `expected [host]:port, got ${JSON.stringify(value)}` };
      return { ok: true, value: { host: host ? host : undefined, port: Number(m[2]) } };
    },
  };
}

/**
 * A signing key ring: comma-separated secrets, current first (see `hmac.ts`), each at least `minLength`
 * characters.
 *
 * @example
 * readEnv({ INTERNAL_SIGNING_SECRET: keyRing() }, { INTERNAL_SIGNING_SECRET: 'new,old' }); // ['new', 'old']
 */
export function keyRing(options: { minLength?: number } = {}): EnvVar<string[]> {
  const minLength = options.minLength ?? 1;
  return {
    read(raw) {
      if (raw === undefined || raw.trim() === '') return { ok: false, problem: 'required but not set (comma-separated secrets, current first)' };
      const ring = keyRingFromEnv(raw);
      if (ring.length === 0) return { ok: false, problem: 'expected at least one non-empty secret' };
      const short = ring.filter((k) => k.length < minLength).length;
      if (short > 0) return { ok: false, problem: `every secret must be at least ${minLength} characters; ${short} of ${ring.length} are shorter` };
      return { ok: true, value: ring };
    },
  };
}

/**
 * Reads every variable of a spec, or throws one {@link ConfigError} naming every problem. A value a
 * problem echoes is shown without the password of any URL in it.
 *
 * @example
 * const env = readEnv({ PORT: int({ default: 3000, min: 0, max: 65535 }), REDIS_URL: url(['redis', 'rediss']) });
 */
export function readEnv<S extends Spec>(spec: S, source: NodeJS.ProcessEnv = process.env): EnvOf<S> {
  const out: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [name, variable] of Object.entries(spec)) {
    const result = variable.read(source[name]);
    // A problem may echo the value, and a misplaced URL's password would be printed at start with it.
    if (result.ok) out[name] = result.value;
    else problems.push(`${name}: ${redactUrlPasswords(result.problem)}`);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return out as EnvOf<S>;
}
