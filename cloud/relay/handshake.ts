/**
 * The connect middleware: decodes the claims header once per connection, before any event handler,
 * fixes the socket's identity for its life and joins it to one room per membership. A connection carries
 * one socket at most.
 */
import type { ExtendedError, Socket } from 'socket.io';
import { CLAIMS_HEADER, decodeClaims, domainsOf } from '../../shared/claims.js';
import type { Logger } from '../../shared/logger.js';
import type { RelayMetrics } from './metrics.js';
import { domainRoom } from './rooms.js';

/** The identity the server fixes for a socket. Nothing the client sends later changes it. */
export interface SocketIdentity {
  accountId: string;
  accountName: string | undefined;
  /** Domain names of the account's memberships. */
  domains: string[];
  /** The raw header, forwarded verbatim to the building directory. Never logged. */
  claimsHeader: string;
}

export interface RelaySocketData {
  identity: SocketIdentity;
}

/** The message of the connect_error a rejected handshake gets. */
export const UNAUTHORIZED = 'unauthorized';

/**
 * Builds the middleware. A missing or malformed header fails the handshake with `unauthorized` and
 * counts it; the reason is logged, never the header.
 *
 * A second namespace CONNECT on a connection is refused with `unauthorized` too, and not counted (the
 * counter is for claims headers). Socket.IO itself refuses one only once the first socket has joined, a
 * tick after its CONNECT: every CONNECT batched in one long-polling body, or in the websocket frames of
 * one read, would otherwise get a socket of its own, in every domain room and with its own lifetime timer,
 * and each message would be written to that one connection once per socket.
 */
export function claimsMiddleware(deps: { metrics: RelayMetrics; logger: Logger }) {
  // Engine.IO connections that already asked for a socket, whether it was accepted or not: the claims of
  // a later one would be the same header, read from the connection's first request.
  const connectsOf = new WeakMap<object, number>();
  return (socket: Socket, next: (err?: ExtendedError) => void): void => {
    const connects = (connectsOf.get(socket.conn) ?? 0) + 1;
    connectsOf.set(socket.conn, connects);
    if (connects > 1) {
      // Once per connection: a body of thousands of CONNECTs must not become thousands of log lines.
      if (connects === 2) deps.logger.info({ reason: 'second socket on one connection', address: socket.handshake.address }, 'handshake rejected');
      next(new Error(UNAUTHORIZED));
      return;
    }
    const header = socket.handshake.headers[CLAIMS_HEADER];
    const result = decodeClaims(header);
    if (!result.ok || typeof header !== 'string') {
      deps.metrics.connectionsRejected.inc();
      deps.logger.info({ reason: result.ok ? 'repeated header' : result.reason, address: socket.handshake.address }, 'handshake rejected');
      next(new Error(UNAUTHORIZED));
      return;
    }
    const identity: SocketIdentity = {
      accountId: result.claims.sub,
      accountName: result.claims.accountName,
      domains: domainsOf(result.claims),
      claimsHeader: header,
    };
    (socket.data as RelaySocketData).identity = identity;
    if (identity.domains.length > 0) void socket.join(identity.domains.map(domainRoom));
    next();
  };
}
