/**
 * Where a Web Push may go. A subscription's endpoint is chosen by whoever subscribes, so without a
 * guard any member could make the service POST to loopback, the cloud metadata address or the private
 * network, and read from /trigger's `push` count whether the target answered 2xx. The guard sits where
 * the socket is opened: the host is resolved once, by the lookup the socket then connects with, and
 * refused when any of its addresses is private. A name that resolves to a public address at /subscribe
 * and to a private one later (DNS rebinding) is refused too.
 *
 * The same lookup bounds how many push hosts are looked up at once, one lookup at a time per host:
 * dns.lookup runs on libuv's small threadpool, and a lookup that never answers holds its thread for good
 * (see {@link limitLookups}).
 */
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { buildConnector } from 'undici';

/** IPv4 ranges no push service lives in. Each is refused as is, IPv4-mapped and NAT64-embedded. */
const PRIVATE_IPV4: ReadonlyArray<[network: string, prefix: number]> = [
  ['0.0.0.0', 8], // "this network", 0.0.0.0 (unspecified) included
  ['10.0.0.0', 8], // RFC 1918
  ['100.64.0.0', 10], // carrier-grade NAT, often internal in clouds
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata (169.254.169.254)
  ['172.16.0.0', 12], // RFC 1918
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.168.0.0', 16], // RFC 1918
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast included
];

const PRIVATE_IPV6: ReadonlyArray<[network: string, prefix: number]> = [
  ['::', 96], // unspecified (::), loopback (::1) and the deprecated IPv4-compatible form
  ['100::', 64], // discard-only
  ['fc00::', 7], // unique-local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local, deprecated
  ['ff00::', 8], // multicast
];

function privateRanges(): BlockList {
  const list = new BlockList();
  for (const [network, prefix] of PRIVATE_IPV4) {
    // BlockList also matches IPv4-mapped IPv6 (::ffff:10.0.0.1) against IPv4 rules.
    list.addSubnet(network, prefix, 'ipv4');
    list.addSubnet(`64:ff9b::${network}`, 96 + prefix, 'ipv6');
  }
  for (const [network, prefix] of PRIVATE_IPV6) list.addSubnet(network, prefix, 'ipv6');
  return list;
}

const PRIVATE = privateRanges();

/**
 * True for an IP address in a range no push service lives in: loopback, RFC 1918, link-local,
 * unique-local, unspecified, multicast and reserved, also in IPv4-mapped form. False for anything that
 * is not an IP address.
 *
 * @example
 * isPrivateAddress('169.254.169.254'); // true
 * isPrivateAddress('::ffff:127.0.0.1'); // true
 * isPrivateAddress('142.250.74.10'); // false
 */
export function isPrivateAddress(address: string): boolean {
  const version = isIP(address);
  if (version === 0) return false;
  return PRIVATE.check(address, version === 4 ? 'ipv4' : 'ipv6');
}

/** The address when a URL hostname (`[::1]` as URL writes it) is a private IP literal. */
export function privateIpLiteral(hostname: string): string | undefined {
  const address = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return isPrivateAddress(address) ? address : undefined;
}

/** A push endpoint whose host is, or resolves to, a private address. */
export class ForbiddenDestinationError extends Error {
  readonly code = 'ERR_PUSH_FORBIDDEN_DESTINATION';
  constructor(
    readonly host: string,
    readonly address: string,
  ) {
    super(host === address ? `push endpoint host ${host} is a private address` : `push endpoint host ${host} resolves to the private address ${address}`);
    this.name = 'ForbiddenDestinationError';
  }
}

/** A push whose host could not be looked up: the push lookups in flight stayed busy past its wait. */
export class LookupSlotTimeoutError extends Error {
  readonly code = 'ERR_PUSH_LOOKUP_BUSY';
  constructor(
    readonly host: string,
    readonly waitedMs: number,
  ) {
    super(`push endpoint host ${host} was not looked up: every DNS lookup slot for pushes stayed taken for ${waitedMs} ms`);
    this.name = 'LookupSlotTimeoutError';
  }
}

/**
 * A push whose host's DNS lookup did not answer within its wait, or, when `remembered`, whose host's
 * lookup did not answer a moment ago: it is not looked up again until {@link UNANSWERED_HOST_MEMORY_MS}
 * has passed.
 */
export class LookupUnansweredError extends Error {
  readonly code = 'ERR_PUSH_LOOKUP_UNANSWERED';
  constructor(
    readonly host: string,
    readonly waitedMs: number,
    readonly remembered: boolean,
  ) {
    super(
      remembered
        ? `push endpoint host ${host} was not looked up: its DNS lookup did not answer within ${waitedMs} ms a moment ago, and it is not tried again yet`
        : `push endpoint host ${host} did not answer its DNS lookup within ${waitedMs} ms`,
    );
    this.name = 'LookupUnansweredError';
  }
}

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
 * of pushes to it (a fan-out, the next alerts of a slice) fails at once rather than each waiting out its
 * lookup wait; short enough that a host whose DNS recovers gets its pushes again soon.
 */
export const UNANSWERED_HOST_MEMORY_MS = 30_000;

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
 * `resolve`, with at most `maxInFlight` lookups running at once. dns.lookup runs getaddrinfo on libuv's
 * threadpool (4 threads, shared with every other lookup, file and crypto call of the process), and
 * neither an abort nor a connect timeout can cancel it: without a bound, pushes to a host whose DNS
 * never answers take every thread, one each, and stall the whole process. A lookup keeps its slot until
 * it answers, however late, since its thread is busy until then.
 *
 * So that one such host cannot take every slot (a pool opens many connections to it, each looking it
 * up), callers asking for a host already being looked up, or waiting for a slot, share that lookup.
 * Every caller waits at most `waitMs`: for a slot ({@link LookupSlotTimeoutError}), then for the answer
 * ({@link LookupUnansweredError}). A lookup still unanswered `waitMs` after it started fails all its
 * callers, and its host is refused at once, with no lookup and no slot, for `rememberMs`.
 *
 * @example
 * const resolve = limitLookups(systemResolver, { maxInFlight: 2, waitMs: 5000 });
 */
export function limitLookups(resolve: Resolver, options: { maxInFlight: number; waitMs: number; rememberMs?: number }): Resolver {
  const { maxInFlight, waitMs } = options;
  const rememberMs = options.rememberMs ?? UNANSWERED_HOST_MEMORY_MS;
  let inFlight = 0;
  const queue: SharedLookup[] = [];
  const pending = new Map<string, SharedLookup>();
  /** Hosts whose lookup outlived its wait, with when they may be looked up again. */
  const unanswered = new Map<string, number>();

  const remember = (hostname: string) => {
    const now = Date.now();
    for (const [host, until] of unanswered) if (until <= now) unanswered.delete(host);
    unanswered.set(hostname, now + rememberMs);
  };
  const isRemembered = (hostname: string) => {
    const until = unanswered.get(hostname);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
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
      for (const answer of [...lookup.waiters.keys()]) settle(lookup, answer, new LookupUnansweredError(lookup.hostname, waitMs, false), []);
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
      process.nextTick(callback, new LookupUnansweredError(hostname, waitMs, true), []);
      return;
    }
    const lookup: SharedLookup = shared ?? { key, hostname, options: lookupOptions, state: 'queued', waiters: new Map() };
    // A caller's own function: the same callback passed twice still gets two answers.
    const answer: Answer = (err, addresses) => callback(err, addresses);
    const deadline = setTimeout(() => {
      lookup.waiters.delete(answer);
      if (lookup.state !== 'queued') {
        answer(new LookupUnansweredError(hostname, waitMs, false), []);
        return;
      }
      if (lookup.waiters.size === 0) {
        queue.splice(queue.indexOf(lookup), 1);
        pending.delete(key);
      }
      answer(new LookupSlotTimeoutError(hostname, waitMs), []);
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
 * A socket `lookup` on top of `resolve`, refusing a host when any of its addresses is private (unless
 * `allowPrivate`). It answers in the form the socket asked for (one address, or all of them for happy
 * eyeballs).
 */
export function pushLookup(resolve: Resolver, options: { allowPrivate: boolean }): LookupFunction {
  return (hostname, lookupOptions, callback) => {
    resolve(hostname, { ...lookupOptions, all: true }, (err, addresses) => {
      if (err) {
        callback(err, '');
        return;
      }
      const refused = options.allowPrivate ? undefined : addresses.find((a) => isPrivateAddress(a.address));
      const first = addresses[0];
      if (refused) callback(new ForbiddenDestinationError(hostname, refused.address), '');
      else if (lookupOptions.all) callback(null, addresses);
      else if (first) callback(null, first.address, first.family);
      else callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '');
    });
  };
}

/**
 * The undici connector of pushes: connects through `lookup` ({@link pushLookup}), with a connect
 * timeout. Unless `allowPrivate`, an IP-literal host is checked as is (a socket never looks one up).
 *
 * @example
 * const lookup = pushLookup(limitLookups(systemResolver, { maxInFlight: 2, waitMs: 5000 }), { allowPrivate: false });
 * const pool = new Pool('https://push.example.com', { connect: pushConnector({ timeout: 10_000, lookup, allowPrivate: false }) });
 */
export function pushConnector(options: { timeout: number; lookup: LookupFunction; allowPrivate: boolean }): buildConnector.connector {
  const connect = buildConnector({ timeout: options.timeout, lookup: options.lookup });
  if (options.allowPrivate) return connect;
  return (target, callback) => {
    const literal = privateIpLiteral(target.hostname);
    if (literal !== undefined) {
      callback(new ForbiddenDestinationError(target.hostname, literal), null);
      return;
    }
    connect(target, callback);
  };
}

/**
 * Whether a push may go to an endpoint of this URL scheme (`https:`, or `http:` too when allowed for
 * local push services): checked at /subscribe and again at every push, since an endpoint stored while
 * `http:` was allowed stays stored after it no longer is.
 */
export function pushSchemeAllowed(protocol: string, allowHttp: boolean): boolean {
  return protocol === 'https:' || (allowHttp && protocol === 'http:');
}
