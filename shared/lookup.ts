/**
 * Bounded host lookups for the sockets a service opens to hosts it does not run: push services, building
 * devices. dns.lookup runs getaddrinfo on libuv's threadpool (4 threads, shared with every other lookup,
 * file and crypto call of the process), and neither an abort nor a connect timeout can cancel it: a host
 * whose DNS never answers holds a thread until the resolver gives up. Unbounded, a few requests to such a
 * host take every thread, and every other lookup of the process (PostgreSQL, Redis and Kafka reconnects,
 * the building directory) queues behind them. {@link limitLookups} bounds them; {@link socketLookup}
 * hands the result to a socket (undici's `connect.lookup`).
 */
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { performance } from 'node:perf_hooks';

/** Resolves a host to all its addresses, in dns.lookup's shape with `all: true`. */
export type Resolver = (
  hostname: string,
  options: LookupAllOptions,
  callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/** dns.lookup: the system resolver, so /etc/hosts and the host's resolver configuration apply. */
export const systemResolver: Resolver = (hostname, options, callback) => dnsLookup(hostname, options, callback);

/**
 * How long a host whose lookup outlived its wait is refused without a lookup. Long enough that a burst
 * of requests to it (a push fan-out, clicks on a device) fails at once rather than each waiting out its
 * lookup wait; short enough that a host whose DNS recovers is reached again soon.
 */
export const UNANSWERED_HOST_MEMORY_MS = 30_000;

/** A host that could not be looked up: the lookups in flight stayed busy past its wait. */
export class LookupSlotTimeoutError extends Error {
  readonly code = 'ERR_LOOKUP_BUSY';
  constructor(
    readonly host: string,
    readonly waitedMs: number,
    subject = 'host',
  ) {
    super(`${subject} ${host} was not looked up: every DNS lookup slot stayed taken for ${waitedMs} ms`);
    this.name = 'LookupSlotTimeoutError';
  }
}

/**
 * A host whose DNS lookup did not answer within its wait, or, when `remembered`, whose lookup did not
 * answer a moment ago: it is not looked up again until the limiter's memory ({@link UNANSWERED_HOST_MEMORY_MS}
 * by default) has passed.
 */
export class LookupUnansweredError extends Error {
  readonly code = 'ERR_LOOKUP_UNANSWERED';
  constructor(
    readonly host: string,
    readonly waitedMs: number,
    readonly remembered: boolean,
    subject = 'host',
  ) {
    super(
      remembered
        ? `${subject} ${host} was not looked up: its DNS lookup did not answer within ${waitedMs} ms a moment ago, and it is not tried again yet`
        : `${subject} ${host} did not answer its DNS lookup within ${waitedMs} ms`,
    );
    this.name = 'LookupUnansweredError';
  }
}

export interface LookupLimits {
  /** Lookups running at once; leave the rest of libuv's 4 threads to the process. */
  maxInFlight: number;
  /** How long a caller waits for a slot, then for the answer. */
  waitMs: number;
  /** How long a host whose lookup outlived `waitMs` is refused without a lookup. Default {@link UNANSWERED_HOST_MEMORY_MS}. */
  rememberMs?: number;
  /** How the errors name the host, e.g. `push endpoint host` or `device host`. Default `host`. */
  subject?: string;
}

type Answer = (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void;

/** One lookup, shared by every caller that asked for the same host (and options) while it was pending. */
interface SharedLookup {
  key: string;
  hostname: string;
  options: LookupAllOptions;
  /** `overdue`: it ran past its wait and has not answered yet; it keeps its slot until it does. */
  state: 'queued' | 'running' | 'overdue';
  /** Callers still waiting for its answer, each with its own deadline. */
  waiters: Map<Answer, NodeJS.Timeout>;
}

/**
 * `resolve`, with at most `maxInFlight` lookups running at once. A lookup keeps its slot until it
 * answers, however late, since its thread is busy until then: without the bound, requests to a host
 * whose DNS never answers take every thread of libuv's pool, one each, and stall the whole process.
 *
 * So that one such host cannot take every slot (a pool opens many connections to it, each looking it
 * up), callers asking for a host already being looked up, or waiting for a slot, share that lookup.
 * Every caller waits at most `waitMs`: for a slot ({@link LookupSlotTimeoutError}), then for the answer
 * ({@link LookupUnansweredError}). A lookup still unanswered `waitMs` after it started fails all its
 * callers, and its host is refused at once, with no lookup and no slot, for `rememberMs`.
 *
 * The state lives in the returned function: each limiter (one per process and purpose) has its own.
 *
 * @example
 * const resolve = limitLookups(systemResolver, { maxInFlight: 2, waitMs: 5000, subject: 'device host' });
 * const lookup = socketLookup(resolve); // undici: new Agent({ connect: { lookup } })
 */
export function limitLookups(resolve: Resolver, limits: LookupLimits): Resolver {
  const { maxInFlight, waitMs } = limits;
  const rememberMs = limits.rememberMs ?? UNANSWERED_HOST_MEMORY_MS;
  const subject = limits.subject ?? 'host';
  let inFlight = 0;
  const queue: SharedLookup[] = [];
  const pending = new Map<string, SharedLookup>();
  /**
   * Hosts whose lookup outlived its wait, with when they may be looked up again, on the monotonic clock:
   * a wall clock stepped back (a gateway booted with its RTC decades ahead, then set by NTP) would
   * otherwise refuse them for as long as the step instead of `rememberMs`.
   */
  const unanswered = new Map<string, number>();

  const remember = (hostname: string) => {
    const now = performance.now();
    for (const [host, until] of unanswered) if (until <= now) unanswered.delete(host);
    unanswered.set(hostname, now + rememberMs);
  };
  const isRemembered = (hostname: string) => {
    const until = unanswered.get(hostname);
    if (until === undefined) return false;
    if (until > performance.now()) return true;
    unanswered.delete(hostname);
    return false;
  };
  const settle = (lookup: SharedLookup, answer: Answer, err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => {
    clearTimeout(lookup.waiters.get(answer));
    lookup.waiters.delete(answer);
    answer(err, addresses);
  };

  const run = (lookup: SharedLookup) => {
    inFlight++;
    lookup.state = 'running';
    const overdue = setTimeout(() => {
      lookup.state = 'overdue';
      remember(lookup.hostname);
      for (const answer of [...lookup.waiters.keys()]) settle(lookup, answer, new LookupUnansweredError(lookup.hostname, waitMs, false, subject), []);
    }, waitMs);
    let answered = false;
    resolve(lookup.hostname, lookup.options, (err, addresses) => {
      if (answered) return;
      answered = true;
      clearTimeout(overdue);
      inFlight--;
      pending.delete(lookup.key);
      const next = queue.shift();
      if (next) run(next);
      for (const answer of [...lookup.waiters.keys()]) settle(lookup, answer, err, addresses);
    });
  };

  return (hostname, lookupOptions, callback) => {
    const key = keyOf(hostname, lookupOptions);
    const shared = pending.get(key);
    if (shared?.state === 'overdue') remember(hostname);
    if (isRemembered(hostname)) {
      process.nextTick(callback, new LookupUnansweredError(hostname, waitMs, true, subject), []);
      return;
    }
    const lookup: SharedLookup = shared ?? { key, hostname, options: lookupOptions, state: 'queued', waiters: new Map() };
    // A caller's own function: the same callback passed twice still gets two answers.
    const answer: Answer = (err, addresses) => callback(err, addresses);
    const deadline = setTimeout(() => {
      lookup.waiters.delete(answer);
      if (lookup.state !== 'queued') {
        answer(new LookupUnansweredError(hostname, waitMs, false, subject), []);
        return;
      }
      if (lookup.waiters.size === 0) {
        queue.splice(queue.indexOf(lookup), 1);
        pending.delete(key);
      }
      answer(new LookupSlotTimeoutError(hostname, waitMs, subject), []);
    }, waitMs);
    lookup.waiters.set(answer, deadline);
    if (shared) return;
    pending.set(key, lookup);
    if (inFlight < maxInFlight) run(lookup);
    else queue.push(lookup);
  };
}

/** Lookups are shared by host and by the options that shape their answer. */
function keyOf(hostname: string, options: LookupAllOptions): string {
  return JSON.stringify([hostname, options.family ?? 0, options.hints ?? 0]);
}

/**
 * A socket `lookup` on top of `resolve`: it answers in the form the socket asked for (one address, or
 * all of them for happy eyeballs). `refuse`, when given, sees every address first and may fail the
 * lookup with its own error (the push sender refuses private addresses this way).
 *
 * @example
 * const lookup = socketLookup(limitLookups(systemResolver, { maxInFlight: 2, waitMs: 2500 }));
 * const agent = new Agent({ connect: { timeout: 5000, lookup } });
 */
export function socketLookup(resolve: Resolver, options: { refuse?: (hostname: string, addresses: readonly LookupAddress[]) => Error | undefined } = {}): LookupFunction {
  return (hostname, lookupOptions, callback) => {
    resolve(hostname, { ...lookupOptions, all: true }, (err, addresses) => {
      if (err) {
        callback(err, '');
        return;
      }
      const refused = options.refuse?.(hostname, addresses);
      const first = addresses[0];
      if (refused) callback(refused, '');
      else if (lookupOptions.all) callback(null, addresses);
      else if (first) callback(null, first.address, first.family);
      else callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '');
    });
  };
}
