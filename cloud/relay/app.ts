/**
 * The relay's HTTP and socket surface, built from injected ports: GET /health, GET /metrics and the
 * Socket.IO server on the same HTTP server, fed by the broker subscriber.
 *
 * Each relay emits only to its own sockets (the in-memory adapter, no cross-replica adapter): with
 * several replicas, each one subscribes to the broker itself. See README.md.
 */
import { createServer, type IncomingMessage, type Server as HttpServer } from 'node:http';
import { performance } from 'node:perf_hooks';
import express from 'express';
import { Server, type Socket } from 'socket.io';
import type { BuildingDirectory } from '../../shared/directory.js';
import { describeError, errorHandler, notFoundHandler } from '../../shared/errors.js';
import { healthHandler } from '../../shared/http.js';
import { closeServer, listen, settlesWithin } from '../../shared/lifecycle.js';
import type { Logger } from '../../shared/logger.js';
import { metricsHandler, type Registry } from '../../shared/prom.js';
import type { Notification } from '../../shared/notification.js';
import { capBacklog, STALLED_AFTER_MS } from './backlog.js';
import { trackConnections } from './connections.js';
import { claimsMiddleware, type RelaySocketData } from './handshake.js';
import { socketLifetimeMs, type Random } from './lifetime.js';
import { createRelayMetrics, type RelayMetrics } from './metrics.js';
import type { BrokerMessage, BrokerSubscriber } from './redis-subscriber.js';
import { channelLabelOf, DEFAULT_CHANNELS, routeBrokerMessage, type BrokerChannels } from './routing.js';
import { attachSubscriptions } from './subscriptions.js';

export interface ServerToClientEvents {
  notification: (notification: Notification) => void;
  telemetry: (reading: Record<string, unknown>) => void;
}

export interface ClientToServerEvents {
  subscribe_building: (...args: unknown[]) => void;
  unsubscribe_building: (...args: unknown[]) => void;
}

export type RelayServer = Server<ClientToServerEvents, ServerToClientEvents, Record<string, never>, RelaySocketData>;

export interface RelayDeps {
  directory: BuildingDirectory;
  broker: BrokerSubscriber;
  registry: Registry;
  logger: Logger;
}

export interface RelayOptions {
  /** The only origin allowed to call cross-origin (with credentials), e.g. `http://localhost:5173`. */
  frontendOrigin: string;
  /** SOCKET_MAX_LIFETIME_SECS in ms; each socket is dropped up to a random share earlier (see lifetime.ts). */
  maxLifetimeMs: number;
  channels?: BrokerChannels;
  random?: Random;
}

export interface Relay {
  readonly server: HttpServer;
  readonly io: RelayServer;
  readonly metrics: RelayMetrics;
  /** Listens (port 0 for a free one), then starts the broker subscriber. Resolves with the port. */
  start(port: number, host?: string): Promise<number>;
  /**
   * Stops the subscriber, closes every socket, then the HTTP server. A connection whose peer has not
   * answered the close within {@link CLOSE_GRACE_MS} is destroyed.
   */
  stop(): Promise<void>;
}

/** Client-to-server messages are a building id at most; anything bigger closes the connection. */
const MAX_CLIENT_MESSAGE_BYTES = 16 * 1024;

/**
 * How long a stop waits for peers to answer the websocket close before it destroys their connections:
 * long enough for any client that still reads, well inside the 5 s SIGTERM deadline.
 */
export const CLOSE_GRACE_MS = 1000;

/**
 * Builds a relay. Nothing listens or connects until `start()`.
 *
 * @example
 * const relay = createRelay({ directory, broker, registry, logger }, { frontendOrigin, maxLifetimeMs: 900_000 });
 * const port = await relay.start(3000);
 */
export function createRelay(deps: RelayDeps, options: RelayOptions): Relay {
  const { logger, broker, directory } = deps;
  const channels = options.channels ?? DEFAULT_CHANNELS;
  const metrics = createRelayMetrics(deps.registry);

  const app = express();
  app.disable('x-powered-by');
  app.get('/health', healthHandler);
  app.get('/metrics', metricsHandler(deps.registry));
  app.use(notFoundHandler);
  app.use(errorHandler(logger));
  const server = createServer(app);
  const connections = trackConnections(server, {
    stalledAfterMs: STALLED_AFTER_MS,
    onStalled: (unwritten) => logger.warn({ unwritten }, 'client did not read a poll response; connection destroyed'),
  });

  const io: RelayServer = new Server(server, {
    serveClient: false,
    maxHttpBufferSize: MAX_CLIENT_MESSAGE_BYTES,
    cors: { origin: options.frontendOrigin, credentials: true },
    // A browser always sends Origin; one from another site must not ride on the user's cookie.
    allowRequest: (req: IncomingMessage, callback) => {
      const origin = req.headers.origin;
      callback(null, origin === undefined || origin === options.frontendOrigin);
    },
  });
  io.use(claimsMiddleware({ metrics, logger }));

  // The claims come from the first request of the Engine.IO connection (handshake.ts), and a client may
  // wait up to Socket.IO's connectTimeout (45 s) before it joins the namespace: a socket's lifetime counts
  // from when its connection opened, so the join cannot make the claims outlive the maximum.
  const openedAt = new WeakMap<object, number>();
  io.engine.on('connection', (conn: object) => openedAt.set(conn, performance.now()));
  const lifetimeLeftMs = (conn: object): number => {
    const age = performance.now() - (openedAt.get(conn) ?? performance.now());
    return Math.ceil(socketLifetimeMs(options.maxLifetimeMs, options.random) - age);
  };

  const lifetimes = new Set<NodeJS.Timeout>();
  io.on('connection', (socket: Socket<ClientToServerEvents, ServerToClientEvents, Record<string, never>, RelaySocketData>) => {
    const { identity } = socket.data;
    const expire = () => {
      metrics.sessionsExpired.inc();
      logger.debug({ accountId: identity.accountId }, 'socket reached its maximum lifetime');
      socket.disconnect(true);
    };
    const leftMs = lifetimeLeftMs(socket.conn);
    // At once, not on a timer: nothing the client sends on claims this old may be served.
    if (leftMs <= 0) {
      expire();
      return;
    }
    metrics.connectedClients.inc();
    const lifetime = setTimeout(() => {
      lifetimes.delete(lifetime);
      expire();
    }, leftMs);
    lifetimes.add(lifetime);
    socket.once('disconnect', () => {
      clearTimeout(lifetime);
      lifetimes.delete(lifetime);
      metrics.connectedClients.dec();
      // The relay has one namespace, so a connection whose socket left has nothing more to carry. Left
      // open, a client could leave and join again on it: the join re-reads the connection's first
      // request, so its claims would come back with a fresh lifetime, and the maximum would never bite.
      socket.conn.close();
    });
    capBacklog(socket, (waiting) => logger.warn({ accountId: identity.accountId, waiting }, 'client stopped reading; connection closed'));
    attachSubscriptions(socket, identity, { directory, metrics, logger });
  });

  function relay(message: BrokerMessage): void {
    const label = channelLabelOf(message.channel, channels);
    if (label === undefined) return;
    metrics.payloadBytes.inc({ channel: label }, message.payload.length);
    const route = routeBrokerMessage(message.channel, message.payload.toString('utf8'), channels);
    switch (route.kind) {
      case 'notification':
        if (route.scope === 'domain') io.to(route.room).emit('notification', route.payload);
        else io.emit('notification', route.payload);
        metrics.notificationsRelayed.inc({ scope: route.scope });
        return;
      case 'telemetry':
        io.to(route.room).emit('telemetry', route.payload);
        metrics.telemetryRelayed.inc();
        return;
      case 'skip':
        metrics.messagesSkipped.inc({ channel: route.channel });
        logger.warn({ channel: message.channel, bytes: message.payload.length, reason: route.reason }, 'broker message skipped');
        return;
      case 'foreign':
        return;
    }
  }

  return {
    server,
    io,
    metrics,
    async start(port, host) {
      const bound = await listen(server, port, host);
      await broker.start(relay);
      logger.info({ port: bound }, 'listening');
      return bound;
    },
    async stop() {
      try {
        await broker.stop();
      } catch (err) {
        logger.warn({ error: describeError(err) }, 'broker subscriber did not stop cleanly');
      }
      for (const timer of lifetimes) clearTimeout(timer);
      lifetimes.clear();
      const closing = closeServer(server);
      const closingSockets = io.close();
      if (!(await settlesWithin(closingSockets, CLOSE_GRACE_MS))) {
        logger.info({ destroyed: connections.destroyAll() }, 'connections that did not answer the close were destroyed');
      }
      await closingSockets;
      await closing;
    },
  };
}
