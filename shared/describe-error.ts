/**
 * Describing errors and values for logs without leaking what they carry. Kept apart from the HTTP
 * helpers and the logger so the edge and the configuration reader can use it without either.
 */

/** What a hidden secret is written as. */
export const REDACTED = '[redacted]';

/** Where a URL's authority (`user:password@host:port`) ends. */
const AUTHORITY_END = /[\s/?#]/;

/**
 * Hides the password of every URL's user info, `scheme://user:password@host`, inside any text (a device
 * endpoint, a broker address, a driver's message, a configuration value). The user info ends at the
 * authority's last `@`, as a URL parser reads it, so a password holding `@` is hidden whole. Scanned by
 * hand, once through the text: a regular expression for this backtracks quadratically over text a
 * caller may control.
 *
 * @example
 * redactUrlPasswords('connect to postgres://lintel:pw@db/lintel'); // 'connect to postgres://lintel:[redacted]@db/lintel'
 */
export function redactUrlPasswords(text: string): string {
  if (!text.includes('@')) return text;
  let out = '';
  let copied = 0;
  for (let scheme = text.indexOf('://'); scheme !== -1; ) {
    const start = scheme + 3;
    let end = start;
    while (end < text.length && !AUTHORITY_END.test(text.charAt(end))) end++;
    const authority = text.slice(start, end);
    const colon = authority.indexOf(':');
    const lastAt = authority.lastIndexOf('@');
    if (colon !== -1 && colon < lastAt) {
      out += `${text.slice(copied, start + colon + 1)}${REDACTED}`;
      copied = start + lastAt;
    }
    // From the authority's start, not its end: with no separator between two URLs (`a://h1,b://u:p@h2`)
    // the authority ran on to the next URL's `:`, and a search from its end began past that URL's `://`.
    // The authority holds no `/`, so the next `://` found is the next URL's.
    scheme = text.indexOf('://', start);
  }
  return out + text.slice(copied);
}

/**
 * An error whose message is built only from values we chose (file names, codes), never from input,
 * SQL text or secrets, so {@link describeError} shows it. Set `messageIsSafe` in its constructor.
 */
export interface SafeMessageError extends Error {
  readonly messageIsSafe: true;
}

/**
 * A one-line description of an error that is safe to log: its class and code, never its stack, and no
 * driver detail that may carry SQL text or connection strings. The message is added only for a
 * {@link SafeMessageError}.
 *
 * @example
 * describeError(Object.assign(new Error('connect ECONNREFUSED 10.0.0.5:5432'), { code: 'ECONNREFUSED' })); // 'Error (ECONNREFUSED)'
 * describeError(new MigrationError('tenancy migration 0002_subdomains.sql changed after it was applied; …'));
 * // 'MigrationError: tenancy migration 0002_subdomains.sql changed after it was applied; …'
 */
export function describeError(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    const safe = (err as Partial<SafeMessageError>).messageIsSafe === true;
    return `${err.name}${code !== undefined ? ` (${String(code)})` : ''}${safe ? `: ${err.message}` : ''}`;
  }
  return typeof err;
}

/**
 * A start failure that names the dependency and where it was looked for: a driver's error alone
 * (`Error`, `Error (ECONNREFUSED)`, `Error: Connection is closed.`) names neither. Only the URL's host,
 * port and path are shown, never its user info or query, which may hold a password.
 *
 * @example
 * new DependencyUnreachable('PostgreSQL', 'postgres://u:pw@db:5432/lintel', err).message;
 * // 'cannot reach PostgreSQL at db:5432/lintel: Error (ECONNREFUSED)'
 */
export class DependencyUnreachable extends Error implements SafeMessageError {
  readonly messageIsSafe = true;
  constructor(what: string, url: string, cause: unknown) {
    const { host, pathname } = new URL(url);
    // The path too, unless it could hold part of a password (one with an unencoded / ends the authority).
    super(`cannot reach ${what} at ${host}${/[@:]/.test(pathname) ? '' : pathname}: ${describeError(cause)}`, { cause });
    this.name = 'DependencyUnreachable';
  }
}
