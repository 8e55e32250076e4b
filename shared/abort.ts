/**
 * Waiting on an HTTP request for no longer than its abort signal allows.
 */
import type { Dispatcher } from 'undici';

/**
 * Settles as the undici request `pending` does, or rejects with the signal's reason as soon as
 * `signal` aborts. undici 6 acts on an abort only once the request has a connected socket, so a host
 * that drops SYNs (or a name that never resolves) would hold the caller until the dispatcher's own
 * connect timeout (10 s by default) whatever the caller's timeout says. The request itself still ends:
 * undici aborts it the moment it connects, or it fails with the connection attempt. A reply that lands
 * after the caller gave up is drained here, so its connection is not left hanging.
 *
 * @example
 * const signal = AbortSignal.timeout(2000);
 * const response = await untilAbortedRequest(request(url, { signal }), signal); // rejects with a TimeoutError after 2 s
 */
export async function untilAbortedRequest<T extends Pick<Dispatcher.ResponseData, 'body'>>(pending: Promise<T>, signal: AbortSignal): Promise<T> {
  try {
    return await untilAborted(pending, signal);
  } catch (err) {
    pending.then((late) => late.body.dump(), () => undefined).catch(() => undefined);
    throw err;
  }
}

/** Settles as `pending` does, or rejects with the signal's reason as soon as `signal` aborts. */
async function untilAborted<T>(pending: Promise<T>, signal: AbortSignal): Promise<T> {
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
