/**
 * The connect middleware: decodes the claims header once per connection, before any event handler,
 * fixes the socket's identity for its life and joins it to one room per membership.
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
 */
export function claimsMiddleware(deps: { metrics: RelayMetrics; logger: Logger }) {
  return (socket: Socket, next: (err?: ExtendedError) => void): void => {
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
