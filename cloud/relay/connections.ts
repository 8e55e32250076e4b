/**
 * Every TCP connection the relay's HTTP server accepted, websockets included, so a stop can end the ones a
 * peer keeps open.
 *
 * A websocket's close waits for the peer to answer the close frame (ws: up to 30 s), and Node's
 * `closeAllConnections()` no longer sees a connection once it was upgraded. A peer that never answers (a
 * vanished network, a full receive window, on purpose) would otherwise hold the HTTP server, and so the
 * stop, past the 5 s SIGTERM deadline.
 */
import type { Server as HttpServer } from 'node:http';
import type { Socket } from 'node:net';

export interface OpenConnections {
  /** Destroys every connection still open and returns how many there were. */
  destroyAll(): number;
}

/**
 * Starts tracking the server's connections; each is forgotten once it closes.
 *
 * @example
 * const connections = trackConnections(server);
 * // at stop, once the polite close had its chance:
 * connections.destroyAll();
 */
export function trackConnections(server: HttpServer): OpenConnections {
  const open = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });
  return {
    destroyAll() {
      const count = open.size;
      for (const socket of open) socket.destroy();
      return count;
    },
  };
}
