/**
 * A watch on an HTTP server's connections for a client that stopped reading what it asked for while
 * keeping the connection open.
 *
 * Node hands a response's bytes to the connection at once and keeps what the kernel does not take in
 * the process (`socket.writableLength`). A response the client never reads then never finishes, so
 * neither `keepAliveTimeout` (it starts once a response is written) nor `requestTimeout` (it covers
 * receiving the request) ever closes its connection: the bytes, and the connection, stay for as long as
 * the client likes. The watch destroys a connection whose unwritten bytes have not gone down for
 * `stalledAfterMs`. They go down each time a write handed to the kernel completes, so a client that
 * reads keeps its connection unless, for the whole limit, it reads slower than it is sent, or takes
 * longer than the limit to read what waited while it did not (Node hands that on as one write).
 */
import type { Server as HttpServer } from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';

export interface StallWatch {
  /** How long a connection's unwritten bytes may stay without going down. */
  stalledAfterMs: number;
  /** Called with the bytes dropped, once for each connection destroyed for it. */
  onStalled(unwritten: number): void;
}

export interface StalledConnections {
  /** Stops watching one connection: one that something else now looks after, such as an upgraded websocket. */
  forget(socket: Socket): void;
  /** Stops the watch; it also stops when the server closes. */
  stop(): void;
}

/** Where a watched connection's unwritten bytes stood, and since when. */
interface Seen {
  unwritten: number;
  since: number;
}

/**
 * Watches every connection the server accepts from now on, until it closes, looking at each every
 * fifth of `stalledAfterMs` (at most every second).
 *
 * @example
 * const stalled = watchStalledConnections(server, {
 *   stalledAfterMs: 30_000,
 *   onStalled: (unwritten) => logger.warn({ unwritten }, 'client did not read its response; connection destroyed'),
 * });
 * server.on('upgrade', (_req, socket) => stalled.forget(socket));
 */
export function watchStalledConnections(server: HttpServer, watch: StallWatch): StalledConnections {
  const watched = new Map<Socket, Seen | undefined>();
  const onConnection = (socket: Socket): void => {
    watched.set(socket, undefined);
    socket.once('close', () => watched.delete(socket));
  };

  const sweep = (): void => {
    const now = performance.now();
    for (const [socket, seen] of watched) {
      const unwritten = socket.writableLength;
      if (unwritten === 0 || seen === undefined || unwritten < seen.unwritten) {
        watched.set(socket, unwritten === 0 ? undefined : { unwritten, since: now });
      } else if (now - seen.since >= watch.stalledAfterMs) {
        watched.delete(socket);
        watch.onStalled(unwritten);
        socket.destroy();
      }
    }
  };

  const timer = setInterval(sweep, Math.min(1000, watch.stalledAfterMs / 5));
  timer.unref();
  const stop = (): void => {
    clearInterval(timer);
    server.off('connection', onConnection);
    server.off('close', stop);
    watched.clear();
  };
  server.on('connection', onConnection);
  server.once('close', stop);
  return { forget: (socket) => watched.delete(socket), stop };
}
