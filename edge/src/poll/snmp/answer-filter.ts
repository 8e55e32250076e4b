/**
 * Which datagrams on a session's socket reach net-snmp. net-snmp 3.29 takes an answer from any address
 * and port, matches it to a request by its id alone (sent in clear), and reads an SNMPv3 message at the
 * security level its flags claim, not at the user's: a GetResponse with the authentication and privacy
 * flags clear is read as plaintext, unauthenticated. Anyone on the path could answer a request before the
 * AP, and the made-up stations would be counted. So the session's socket hands net-snmp only:
 *
 * - datagrams from the agent's address (what the socket sent to) and port;
 * - for an SNMPv3 user, only SNMPv3 messages at the user's security level or above, or Reports. A Report
 *   is how an agent answers discovery and tells of an unknown user, a wrong digest or a clock out of the
 *   time window, at a lower level (RFC 3414 §3.2); net-snmp never reads values from one, only resends or
 *   fails the request, so a forged Report can at worst fail a poll, as any forged datagram could.
 *
 * For an SNMPv3 user, a datagram that is no SNMPv3 message (truncated, garbage, another version) is
 * dropped as well, without being parsed by net-snmp.
 */
import type { RemoteInfo, Socket } from 'node:dgram';
import { isIP, SocketAddress } from 'node:net';
import snmp from 'net-snmp';

const { noAuthNoPriv, authNoPriv, authPriv } = snmp.SecurityLevel;
const SEQUENCE = 0x30;
const INTEGER = 0x02;
const OCTET_STRING = 0x04;
const REPORT_PDU = 0xa8;
const FLAG_AUTH = 1;
const FLAG_PRIV = 2;

/** What an agent's answer must match to reach net-snmp. */
export interface ExpectedAnswer {
  /** The agent's addresses, as the socket sent to them (canonical, see {@link canonicalAddress}). */
  addresses: ReadonlySet<string>;
  port: number;
  /** The SNMPv3 user's security level (net-snmp's SecurityLevel); undefined for v2c. */
  securityLevel?: number;
}

/** An address in one spelling, as a socket reports a sender (`0:0::1` → `::1`); as given when it is none. */
export function canonicalAddress(address: string): string {
  const family = isIP(address);
  if (family === 0) return address;
  try {
    return new SocketAddress({ address, family: family === 6 ? 'ipv6' : 'ipv4' }).address;
  } catch {
    // an IPv6 address with a zone (fe80::1%eth0) is compared as written
    return address;
  }
}

/** A BER TLV at `at`: where its value starts and ends, or undefined when it runs past the datagram. */
function tlvAt(datagram: Buffer, at: number, tag: number): { start: number; end: number } | undefined {
  if (at + 2 > datagram.length || datagram[at] !== tag) return undefined;
  let length = datagram[at + 1]!;
  let start = at + 2;
  if (length & 0x80) {
    const bytes = length & 0x7f;
    if (bytes === 0 || bytes > 4 || start + bytes > datagram.length) return undefined;
    length = 0;
    for (let i = 0; i < bytes; i++) length = length * 256 + datagram[start + i]!;
    start += bytes;
  }
  const end = start + length;
  return end > datagram.length ? undefined : { start, end };
}

/**
 * An SNMPv3 message's security level (net-snmp's SecurityLevel, by its flags), and the tag of its PDU when
 * that is in plaintext; undefined for anything that is not an SNMPv3 message.
 */
export function v3SecurityOf(datagram: Buffer): { level: number; plaintextPdu: number | undefined } | undefined {
  const message = tlvAt(datagram, 0, SEQUENCE);
  const version = message && tlvAt(datagram, message.start, INTEGER);
  if (!version || version.end - version.start !== 1 || datagram[version.start] !== 3) return undefined;
  const header = tlvAt(datagram, version.end, SEQUENCE);
  const msgId = header && tlvAt(datagram, header.start, INTEGER);
  const maxSize = msgId && tlvAt(datagram, msgId.end, INTEGER);
  const flags = maxSize && tlvAt(datagram, maxSize.end, OCTET_STRING);
  if (!header || !flags || flags.end - flags.start !== 1) return undefined;
  const securityParameters = tlvAt(datagram, header.end, OCTET_STRING);
  if (!securityParameters) return undefined;
  const bits = datagram[flags.start]!;
  // privacy without authentication is no valid level (RFC 3412 §7.2 step 5): read as the lowest
  const level = bits & FLAG_AUTH ? (bits & FLAG_PRIV ? authPriv : authNoPriv) : noAuthNoPriv;
  if (bits & FLAG_PRIV) return { level, plaintextPdu: undefined };
  const scopedPdu = tlvAt(datagram, securityParameters.end, SEQUENCE);
  const contextEngineId = scopedPdu && tlvAt(datagram, scopedPdu.start, OCTET_STRING);
  const contextName = contextEngineId && tlvAt(datagram, contextEngineId.end, OCTET_STRING);
  return { level, plaintextPdu: contextName && contextName.end < datagram.length ? datagram[contextName.end] : undefined };
}

/**
 * Whether a datagram may be the agent's answer: from its address and port and, for an SNMPv3 user, at the
 * user's level or above, or a Report.
 *
 * @example
 * acceptsAnswer(datagram, { address: '10.0.0.9', port: 161, family: 'IPv4', size: datagram.length }, { addresses: new Set(['10.0.0.9']), port: 161 });
 */
export function acceptsAnswer(datagram: Buffer, sender: RemoteInfo, expected: ExpectedAnswer): boolean {
  if (sender.port !== expected.port || !expected.addresses.has(canonicalAddress(sender.address))) return false;
  if (expected.securityLevel === undefined) return true;
  const security = v3SecurityOf(datagram);
  if (!security) return false;
  return security.level >= expected.securityLevel || security.plaintextPdu === REPORT_PDU;
}

/**
 * Puts `accepts` between a net-snmp session's socket and net-snmp's handler: a datagram it refuses is
 * dropped unseen, as if lost. Throws when the socket does not have exactly net-snmp's one handler (a
 * changed net-snmp), rather than leave the session unguarded.
 */
export function guardSocket(socket: Socket, accepts: (datagram: Buffer, sender: RemoteInfo) => boolean): void {
  const handlers = socket.listeners('message');
  const [deliver] = handlers;
  if (handlers.length !== 1 || deliver === undefined) {
    throw new Error(`net-snmp's session socket has ${handlers.length} message handlers, expected its one; answers cannot be checked`);
  }
  socket.removeAllListeners('message');
  socket.on('message', (datagram: Buffer, sender: RemoteInfo) => {
    if (accepts(datagram, sender)) deliver.call(socket, datagram, sender);
  });
}
