/**
 * The SNMP port: the one thing polling needs from an SNMP agent (walk a subtree with GETBULK), and its
 * net-snmp adapter. Domain code sees plain `{oid, value}` cells, never net-snmp.
 */
import { createSocket, type Socket } from 'node:dgram';
import { lookup as dnsLookup, type LookupOneOptions } from 'node:dns';
import { isIP } from 'node:net';
import snmp from 'net-snmp';
import { MAX_SNMP_INDEX_IDS, SNMP_CELL_BYTES } from '../limits.js';
import type { SnmpTarget } from '../types.js';
import { acceptsAnswer, canonicalAddress, guardSocket } from './answer-filter.js';

/** A cell value as walked: integers as numbers, OCTET STRINGs as bytes, OIDs and IP addresses as text. */
export type SnmpValue = number | string | boolean | Buffer | null;

export interface SnmpCell {
  oid: string;
  value: SnmpValue;
}

/** An open SNMP session to one agent. */
export interface SnmpSession {
  /**
   * Every varbind under `oid`, in order, fetched with GETBULK (`maxRepetitions` per request). Fails with
   * {@link IndexTooLongError} at the first OID whose index, past `oid`, is longer than a table's can be.
   */
  walk(oid: string, maxRepetitions: number): Promise<SnmpCell[]>;
  /**
   * Closes the socket; walks still running reject. Safe to call twice. `kept`: the values it returned
   * stay in use until the poll is done (decoded into a result), so they stay counted in the poll's
   * budget; by default they are dropped, and counted out.
   */
  close(kept?: boolean): void;
}

/**
 * The SNMP values the walks of one poll may return together, shared by every session of the poll: the APs
 * are walked at once, and the answers of those that succeed, walked or decoded, stay in the heap until the
 * poll is done (a failed AP's are dropped and counted out). When
 * a value takes the total past the limit, the session still walking that holds the most gives way (its
 * walks fail with {@link TooManyValuesError}, and its values are counted out, as they are dropped): the
 * runaway agent, not whichever AP answered last.
 */
export class CellBudget {
  private used = 0;
  private readonly walking = new Map<object, { cells: number; giveWay: () => void }>();
  constructor(readonly limit: number) {}

  /** Counts a session in; `giveWay` fails its walks when it is the one to give way. */
  join(holder: object, giveWay: () => void): void {
    this.walking.set(holder, { cells: 0, giveWay });
  }

  /**
   * A session closed: it can no longer give way. Its values stay counted when `kept` (its poll's result
   * holds them until the poll is done), and are counted out otherwise (a failed poll dropped them).
   */
  closed(holder: object, kept: boolean): void {
    const held = this.walking.get(holder);
    if (held === undefined) return;
    this.walking.delete(holder);
    if (!kept) this.used -= held.cells;
  }

  /** Counts `cells` more for a session; past the limit, the session still walking that holds the most gives way. */
  take(holder: object, cells: number): void {
    const held = this.walking.get(holder);
    if (held === undefined) return;
    held.cells += cells;
    this.used += cells;
    while (this.used > this.limit) {
      let largest: [object, { cells: number; giveWay: () => void }] | undefined;
      for (const entry of this.walking) if (largest === undefined || entry[1].cells > largest[1].cells) largest = entry;
      if (largest === undefined) return;
      this.walking.delete(largest[0]);
      this.used -= largest[1].cells;
      largest[1].giveWay();
    }
  }
}

/**
 * Opens a session to a target; `requestTimeoutMs` bounds one request (with its retries), and `cells` the
 * values its walks may return, together with the other sessions drawing on the same budget. The poller
 * gives the target's host as an address, looked up once per poll (host-lookup.ts).
 */
export type OpenSnmpSession = (target: SnmpTarget, options: { requestTimeoutMs: number; cells: CellBudget }) => SnmpSession;

/**
 * The walks of a poll answered more values than its budget, over all APs, tables and columns, and this
 * session held the most: a table too large for the heap, or a runaway agent. Every walk of the session
 * still running fails with it.
 */
export class TooManyValuesError extends Error {
  constructor(readonly maxCells: number) {
    super(`the SNMP answers of this poll passed ${maxCells} values (all access points, tables and columns together), and this one held the most`);
    this.name = 'TooManyValuesError';
  }
}

/**
 * The agent answered, under the column walked, an OID whose row index has more sub-ids than any table read
 * here ({@link MAX_SNMP_INDEX_IDS}): no row the dialect can read, and held until the poll is decoded, such
 * OIDs would fill the heap. The walk fails at the first one. The OID is not quoted: its index may hold a
 * station's MAC.
 */
export class IndexTooLongError extends Error {
  constructor() {
    super(`the agent answered an OID whose row index has more than ${MAX_SNMP_INDEX_IDS} sub-ids; no table read here has one that long`);
    this.name = 'IndexTooLongError';
  }
}

/**
 * What a varbind counts against the budget: one cell, and one more for each {@link SNMP_CELL_BYTES} of its
 * OID and a long string together (both are held until the poll is decoded).
 */
function cellsOf(oid: string, value: SnmpValue): number {
  const bytes = Buffer.isBuffer(value) || typeof value === 'string' ? value.length : 0;
  return 1 + Math.floor((oid.length + bytes) / SNMP_CELL_BYTES);
}

const DOT = '.'.charCodeAt(0);

/** Whether the index of `oid`, past the `prefixLength` characters of `<column>.`, has more than {@link MAX_SNMP_INDEX_IDS} sub-ids. */
function indexTooLong(oid: string, prefixLength: number): boolean {
  // each sub-id takes a digit and a dot at least: a short index is let through without counting
  if (oid.length - prefixLength < 2 * MAX_SNMP_INDEX_IDS) return false;
  let ids = 1;
  for (let i = prefixLength; i < oid.length; i++) {
    if (oid.charCodeAt(i) === DOT && ++ids > MAX_SNMP_INDEX_IDS) return true;
  }
  return false;
}

function userOf(target: SnmpTarget): snmp.User {
  if (!target.user) throw new Error('SNMPv3 target without a user');
  const user: snmp.User = { name: target.user, level: snmp.SecurityLevel.noAuthNoPriv };
  if (target.authKey) {
    user.level = snmp.SecurityLevel.authNoPriv;
    user.authProtocol = snmp.AuthProtocols[target.authProtocol ?? 'sha'];
    user.authKey = target.authKey;
    if (target.privKey) {
      user.level = snmp.SecurityLevel.authPriv;
      user.privProtocol = snmp.PrivProtocols[target.privProtocol ?? 'aes'];
      user.privKey = target.privKey;
    }
  }
  return user;
}

/**
 * net-snmp's error for an answer under another community quotes the community it sent, a secret; this
 * one says the same without it. Every other error is passed on as it is.
 */
function withoutCommunity(error: Error): Error {
  const code = (error as Error & { code?: unknown }).code;
  if (error.name !== 'ResponseInvalidError' || code !== snmp.ResponseInvalidCode.ECommunityNoMatch) return error;
  return Object.assign(new Error('the agent answered under another community than the one sent'), { name: error.name, code });
}

/**
 * A UDP socket for net-snmp that notes the addresses it sends to: the target host, as the socket's lookup
 * answers for each datagram (its own bind address is looked up too, and is not one). The poller hands the
 * session an address, which dns.lookup answers at once, without a thread; a host name given here would
 * be looked up again for every datagram.
 */
function socketNotingAddresses(host: string, addresses: Set<string>) {
  const lookup = (hostname: string, options: LookupOneOptions | number, callback: (error: Error | null, address: string, family: number) => void) =>
    dnsLookup(hostname, typeof options === 'number' ? { family: options } : options, (error, address, family) => {
      if (!error && hostname === host) addresses.add(canonicalAddress(address));
      callback(error, address, family);
    });
  let socket: Socket | undefined;
  return {
    createSocket: (type: 'udp4' | 'udp6') => (socket = createSocket({ type, lookup })),
    socket: () => socket,
  };
}

/**
 * The net-snmp adapter. The version is always explicit (net-snmp defaults to SNMPv1, which has no
 * GETBULK): `2c` uses the community, `3` uses USM with the level implied by the keys given.
 *
 * The socket's family follows the host: UDP over IPv6 for an IPv6 address, else IPv4. The poller looks
 * an AP's host name up for IPv4 only, once per poll, and opens the session on the address (host-lookup.ts),
 * so an AP that answers SNMP over IPv6 only is configured by its address.
 *
 * Only the agent's answers reach net-snmp: from the address and port asked, and for SNMPv3 at the user's
 * security level (answer-filter.ts); anything else on the socket is dropped, as if lost.
 */
export const openNetSnmpSession: OpenSnmpSession = (target, { requestTimeoutMs, cells: budget }) => {
  const retries = 2;
  const agentAddresses = new Set<string>();
  const dgram = socketNotingAddresses(target.host, agentAddresses);
  const options: snmp.SessionOptions = {
    port: target.port,
    // a lost datagram is retried well inside the AP's deadline
    timeout: Math.max(50, Math.floor(requestTimeoutMs / (retries + 1))),
    retries,
    transport: isIP(target.host) === 6 ? 'udp6' : 'udp4',
    // an agent that answers an OID at or before the one asked for would make a walk loop forever
    backwardsGetNexts: false,
    dgramModule: { createSocket: dgram.createSocket },
  };
  const user = target.version === '3' ? userOf(target) : undefined;
  const session = user
    ? snmp.createV3Session(target.host, user, { ...options, version: snmp.Version3 })
    : snmp.createSession(target.host, target.community ?? '', { ...options, version: snmp.Version2c });
  const expected = { addresses: agentAddresses, port: target.port, securityLevel: user?.level };
  try {
    const socket = dgram.socket();
    if (!socket) throw new Error('net-snmp did not create its socket through dgramModule; its answers cannot be checked');
    guardSocket(socket, (datagram, sender) => acceptsAnswer(datagram, sender, expected));
  } catch (error) {
    session.close();
    throw error;
  }

  let closed = false;
  let socketError: Error | undefined;
  const failWalks = new Set<(error: Error) => void>();
  // This session's share of the poll's budget; when it gives way, every walk of it ends.
  const holder = {};
  let gaveWay = false;
  budget.join(holder, () => {
    gaveWay = true;
    const error = new TooManyValuesError(budget.limit);
    for (const failWalk of failWalks) failWalk(error);
  });
  session.on('error', (error) => {
    socketError = error;
    for (const fail of failWalks) fail(error);
  });

  return {
    walk(oid, maxRepetitions) {
      return new Promise<SnmpCell[]>((resolve, reject) => {
        if (closed) return reject(new Error('session closed'));
        if (socketError) return reject(socketError);
        if (gaveWay) return reject(new TooManyValuesError(budget.limit));
        const cells: SnmpCell[] = [];
        let settled = false;
        const settle = (error: Error | null) => {
          if (settled) return;
          settled = true;
          failWalks.delete(fail);
          if (error) reject(withoutCommunity(error));
          else resolve(cells);
        };
        const fail = (error: Error) => settle(error);
        failWalks.add(fail);
        const prefix = `${oid}.`;
        try {
          // walk, not subtree: the subtree check is a string prefix here, far cheaper than net-snmp's
          session.walk(
            oid,
            maxRepetitions,
            (varbinds) => {
              let ended = false;
              for (const varbind of varbinds) {
                // an exception value (endOfMibView, or noSuchObject from some agents) ends a bulk walk;
                // walking on from it would ask for the same OID forever. OIDs going backwards are refused
                // by net-snmp itself (backwardsGetNexts: false).
                if (snmp.isVarbindError(varbind) || !varbind.oid.startsWith(prefix)) {
                  ended = true;
                  break;
                }
                if (indexTooLong(varbind.oid, prefix.length)) {
                  fail(new IndexTooLongError());
                  ended = true;
                  break;
                }
                cells.push({ oid: varbind.oid, value: varbind.value });
                budget.take(holder, cellsOf(varbind.oid, varbind.value));
              }
              // gave way: its walks have failed, and asking on would only add to what cannot be held
              return ended || gaveWay;
            },
            (error) => settle(error),
          );
        } catch (error) {
          settle(error as Error);
        }
      });
    },
    close(kept = false) {
      if (closed) return;
      closed = true;
      budget.closed(holder, kept);
      for (const fail of failWalks) fail(new Error('session closed'));
      try {
        session.close();
      } catch {
        // already closed by a socket error
      }
    },
  };
};
