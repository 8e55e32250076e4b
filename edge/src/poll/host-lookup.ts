/**
 * AP host names, looked up once per poll through a bounded limiter (`shared/lookup.ts`), and the address
 * handed to the SNMP and SSH sessions. Left to the drivers, a name was looked up with dns.lookup for every
 * SNMP datagram (several walks at once, each sending its own) and for every SSH connect; getaddrinfo runs
 * on libuv's 4-thread pool and nothing cancels it when the poll's deadline passes. An AP whose name never
 * answers added stuck lookups each tick faster than the resolver gave them up, and every other lookup of
 * the collector (the other APs by name, the ingest post) queued behind them: the other APs timed out and
 * the batches were recorded unreachable.
 *
 * Through the limiter, AP names take at most {@link DEFAULT_MAX_AP_LOOKUPS} threads, the polls asking
 * for a name already being looked up share that lookup, and a name whose lookup did not answer in time
 * fails its AP at once, with no lookup, for 30 s (the limiter's memory). An IP literal is
 * never looked up.
 */
import type { LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { limitLookups, LookupSlotTimeoutError, LookupUnansweredError, systemResolver, type Resolver } from '../../../shared/lookup.js';

/** AP names looked up at once: two of libuv's 4 threads at most, the rest left to the ingest post and files. */
export const DEFAULT_MAX_AP_LOOKUPS = 2;

/**
 * The longest a poll waits for its AP's name (a lookup slot, then the answer): half the sample's
 * `requestTimeoutS`. A resolver that works answers in milliseconds; one whose name server is down makes
 * getaddrinfo wait 5 s per try. A shorter poll timeout waits half of it, so the AP fails as a name that
 * did not answer, with time left in the tick, rather than as a silent agent.
 */
export const AP_LOOKUP_WAIT_MS = 2500;

const SUBJECT = 'AP host';

/**
 * An AP's addresses for this poll: `family` 4 (SNMP, whose socket is IPv4 for a name) or 0 (any, as SSH
 * connects). An IP literal is its own address. Rejects with {@link LookupUnansweredError} or
 * {@link LookupSlotTimeoutError} when the name is not answered within the wait (at most half of
 * `timeoutMs`), with an error naming the host when the resolver fails it, and when `signal` aborts.
 */
export type LookupApHost = (host: string, options: { family: 0 | 4; timeoutMs: number; signal: AbortSignal }) => Promise<LookupAddress[]>;

export interface ApHostLookupOptions {
  /** How AP names are resolved. Default dns.lookup, so /etc/hosts applies. */
  resolve?: Resolver;
  /** AP names looked up at once. Default {@link DEFAULT_MAX_AP_LOOKUPS}. */
  maxLookups?: number;
}

/** Whether a lookup error says the name was not answered in time, rather than answered with a failure. */
export function isUnansweredLookup(error: unknown): error is LookupUnansweredError | LookupSlotTimeoutError {
  return error instanceof LookupUnansweredError || error instanceof LookupSlotTimeoutError;
}

/**
 * The AP host lookup of one poller (the collector has one, so its limiter is the process's). The state
 * lives in the returned function.
 *
 * @example
 * const lookupHost = createApHostLookup();
 * const [first] = await lookupHost('ap-3.lan', { family: 4, timeoutMs: 5000, signal });
 */
export function createApHostLookup(options: ApHostLookupOptions = {}): LookupApHost {
  const resolve = limitLookups(options.resolve ?? systemResolver, {
    maxInFlight: options.maxLookups ?? DEFAULT_MAX_AP_LOOKUPS,
    waitMs: AP_LOOKUP_WAIT_MS,
    subject: SUBJECT,
  });
  return (host, { family, timeoutMs, signal }) => {
    const literal = isIP(host);
    if (literal !== 0) return Promise.resolve([{ address: host, family: literal }]);
    const waitMs = Math.max(1, Math.min(AP_LOOKUP_WAIT_MS, Math.floor(timeoutMs / 2)));
    return new Promise<LookupAddress[]>((resolveAddresses, reject) => {
      let settled = false;
      const settle = (error: Error | undefined, addresses: LookupAddress[] = []) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        if (error) reject(error);
        else resolveAddresses(addresses);
      };
      const onAbort = () => settle(new Error(`the poll ended while ${SUBJECT} ${host} was being looked up`));
      // The limiter's own wait is the longest; a poll with a shorter timeout gives up on its own. The
      // lookup goes on in the limiter, shared by the next poll, and is remembered once it is overdue.
      const timer = setTimeout(() => settle(new LookupUnansweredError(host, waitMs, false, SUBJECT)), waitMs);
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      resolve(host, { family, all: true }, (error, addresses) => {
        if (error) settle(isUnansweredLookup(error) ? error : lookupFailed(host, error));
        else if (addresses.length === 0) settle(lookupFailed(host, Object.assign(new Error('no address'), { code: 'ENOTFOUND' })));
        else settle(undefined, addresses);
      });
    });
  };
}

/** The resolver's failure, naming the AP's host and the resolver's code (`ENOTFOUND`, `EAI_AGAIN`). */
function lookupFailed(host: string, error: NodeJS.ErrnoException): Error {
  const why = error.code ?? error.message;
  return Object.assign(new Error(`${SUBJECT} ${host} could not be looked up (${why})`), { code: error.code });
}
