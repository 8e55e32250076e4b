/**
 * Every TCP connection the relay's HTTP server accepted, websockets included, so a stop can end the ones a
 * peer keeps open; and a watch on the ones still speaking HTTP, long polling's, for a client that does not
 * read what it asked for.
 *
 * A websocket's close waits for the peer to answer the close frame (ws: up to 30 s), and Node's
 * `closeAllConnections()` no longer sees a connection once it was upgraded. A peer that never answers (a
 * vanished network, a full receive window, on purpose) would otherwise hold the HTTP server, and so the
 * stop, past the 5 s SIGTERM deadline.
 *
 * Long polling hands Engine.IO's whole buffer to each poll's response and counts it written at once, so
 * the backlog cap (backlog.ts) never sees a client that sends each poll on a new connection and reads
 * none of them: what did not fit the kernel's buffers waited in the relay, a session's worth per
 * connection, for as long as the connection stayed. Such a connection is destroyed once its unwritten
 * bytes have not gone down for `stalledAfterMs` (shared/stalled-connections.ts). A websocket is left to
 * the backlog cap, which counts packets and lets a client that reads slowly drain.
 */
import type { Server as HttpServer } from 'node:http';
import type { Socket } from 'node:net';
import { watchStalledConnections, type StallWatch } from '../../shared/stalled-connections.js';

export interface OpenConnections {
  /** Destroys every connection still open and returns how many there were; the watch stops. */
  destroyAll(): number;
}

/**
 * Starts tracking the server's connections; each is forgotten once it closes. Those not upgraded are
 * watched for a client that does not read (see {@link watchStalledConnections}).
 *
 * @example
 * const connections = trackConnections(server, { stalledAfterMs: 5000, onStalled: (bytes) => logger.warn({ bytes }, 'poll not read') });
 * // at stop, once the polite close had its chance:
 * connections.destroyAll();
 */
export function trackConnections(server: HttpServer, watch: StallWatch): OpenConnections {
  const open = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });
  const polling = watchStalledConnections(server, watch);
  // Engine.IO takes the upgrade on its own listener; this one only stops watching the connection.
  server.on('upgrade', (_req, socket: Socket) => polling.forget(socket));

  return {
    destroyAll() {
      polling.stop();
      const count = open.size;
      for (const socket of open) socket.destroy();
      return count;
    },
  };
}
