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
 * bytes have not gone down for `stalledAfterMs`. A websocket is left to the backlog cap, which counts
 * packets and lets a client that reads slowly drain.
 */
import type { Server as HttpServer } from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';

export interface OpenConnections {
  /** Destroys every connection still open and returns how many there were; the watch stops. */
  destroyAll(): number;
}

export interface StallWatch {
  /** How long a connection's unwritten bytes may stay without going down. */
  stalledAfterMs: number;
  /** Called with the bytes dropped, once for each connection destroyed for it. */
  onStalled(unwritten: number): void;
}

/** Where a watched connection's unwritten bytes stood, and since when. */
interface Seen {
  unwritten: number;
  since: number;
}

/**
 * Starts tracking the server's connections; each is forgotten once it closes. Those not upgraded are
 * looked at every fifth of `stalledAfterMs` (at most every second).
 *
 * @example
 * const connections = trackConnections(server, { stalledAfterMs: 5000, onStalled: (bytes) => logger.warn({ bytes }, 'poll not read') });
 * // at stop, once the polite close had its chance:
 * connections.destroyAll();
 */
export function trackConnections(server: HttpServer, watch: StallWatch): OpenConnections {
  const open = new Set<Socket>();
  const polling = new Map<Socket, Seen | undefined>();
  server.on('connection', (socket: Socket) => {
    open.add(socket);
    polling.set(socket, undefined);
    socket.once('close', () => {
      open.delete(socket);
      polling.delete(socket);
    });
  });
  // Engine.IO takes the upgrade on its own listener; this one only stops watching the connection.
  server.on('upgrade', (_req, socket: Socket) => polling.delete(socket));

  const sweep = (): void => {
    const now = performance.now();
    for (const [socket, seen] of polling) {
      const unwritten = socket.writableLength;
      if (unwritten === 0 || seen === undefined || unwritten < seen.unwritten) {
        polling.set(socket, unwritten === 0 ? undefined : { unwritten, since: now });
      } else if (now - seen.since >= watch.stalledAfterMs) {
        polling.delete(socket);
        watch.onStalled(unwritten);
        socket.destroy();
      }
    }
  };
  const timer = setInterval(sweep, Math.min(1000, watch.stalledAfterMs / 5));
  timer.unref();
  server.once('close', () => clearInterval(timer));

  return {
    destroyAll() {
      clearInterval(timer);
      const count = open.size;
      for (const socket of open) socket.destroy();
      return count;
    },
  };
}
