/**
 * Describing errors for logs without leaking what they carry. Kept apart from the HTTP helpers so the
 * edge can use it without a web framework.
 */

/**
 * A one-line description of an error that is safe to log: its class and code, never its stack, and no
 * driver detail that may carry SQL text or connection strings.
 */
export function describeError(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return `${err.name}${code !== undefined ? ` (${String(code)})` : ''}`;
  }
  return typeof err;
}
