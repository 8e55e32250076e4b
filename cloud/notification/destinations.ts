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
 * (`limitLookups` of `shared/lookup.ts`, the limiter device commands and AP polls use too).
 */
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { buildConnector } from 'undici';
import { socketLookup, type Resolver } from '../../shared/lookup.js';

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

/**
 * A socket `lookup` on top of `resolve`, refusing a host when any of its addresses is private (unless
 * `allowPrivate`). It answers in the form the socket asked for (one address, or all of them for happy
 * eyeballs).
 */
export function pushLookup(resolve: Resolver, options: { allowPrivate: boolean }): LookupFunction {
  if (options.allowPrivate) return socketLookup(resolve);
  return socketLookup(resolve, {
    refuse: (hostname, addresses) => {
      const refused = addresses.find((a) => isPrivateAddress(a.address));
      return refused && new ForbiddenDestinationError(hostname, refused.address);
    },
  });
}

/**
 * The undici connector of pushes: connects through `lookup` ({@link pushLookup}), with a connect
 * timeout. Unless `allowPrivate`, an IP-literal host is checked as is (a socket never looks one up).
 *
 * @example
 * const lookup = pushLookup(limitLookups(systemResolver, { maxInFlight: 2, waitMs: 5000, subject: 'push endpoint host' }), { allowPrivate: false });
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
