/**
 * Waiting on an HTTP request for no longer than its abort signal allows.
 */

/**
 * Settles as `pending` does, or rejects with the signal's reason as soon as `signal` aborts. undici 6
 * acts on an abort only once the request has a connected socket, so a host that drops SYNs (or a name
 * that never resolves) would hold the caller until the dispatcher's own connect timeout (10 s by
 * default) whatever the caller's timeout says. The request itself still ends: undici aborts it the
 * moment it connects, or it fails with the connection attempt; a caller that gave up drains a reply
 * that lands late (`pending.then((r) => r.body.dump(), …)`), so its connection is not left hanging.
 *
 * @example
 * const signal = AbortSignal.timeout(2000);
 * const pending = request(url, { signal });
 * const response = await untilAborted(pending, signal); // rejects with a TimeoutError after 2 s
 */
export async function untilAborted<T>(pending: Promise<T>, signal: AbortSignal): Promise<T> {
  let onAbort = (): void => undefined;
  const aborted = new Promise<never>((_resolve, reject) => {
    onAbort = () => reject(signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([pending, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}
