/**
 * Describing errors for logs without leaking what they carry. Kept apart from the HTTP helpers so the
 * edge can use it without a web framework.
 */

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
