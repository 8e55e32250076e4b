/**
 * The chat service's HTTP surface, built from injected ports. Routes are served both at the root and
 * under /chat, so the service works behind an ingress that strips the prefix and one that keeps it.
 * Express serves every route; the common send request goes to a plain handler in front of it
 * (send-path.ts), with the same answers. A state-changing request another site made the browser send
 * is refused with 403 on every route (shared/cross-site.ts).
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import express, { type ErrorRequestHandler } from 'express';
import type { Logger } from 'pino';
import { crossSiteRefusal, refuseCrossSiteWrites } from '../../shared/cross-site.js';
import { HttpError, errorHandler, jsonBody, notFoundHandler, sendError } from '../../shared/errors.js';
import { healthHandler, requireClaims } from '../../shared/http.js';
import { metricsHandler, type Registry } from '../../shared/prom.js';
import { watchStalledConnections } from '../../shared/stalled-connections.js';
import type { AgentPort } from './agent.js';
import { conversationsRouter } from './conversations.js';
import { InFlight } from './in-flight.js';
import type { ChatMetrics } from './metrics.js';
import { CONVERSATION_NOT_FOUND, STOPPING, sendMessageHandler, sendMessageRoute } from './send-message.js';
import { plainSendHandler, plainSendIdOf } from './send-path.js';
import { DEFAULT_HEARTBEAT_MS } from './sse.js';
import type { ConversationStore } from './store.js';

export const DEFAULT_HISTORY_MAX_MESSAGES = 10;

/**
 * How long a connection's unwritten bytes may stay without going down before it is destroyed: far
 * longer than any pause of a browser that reads, even on a poor link, and short enough that a client
 * that stopped reading an answer (up to about 0.4 MB at one frame per character) does not keep it.
 */
export const DEFAULT_STALLED_AFTER_MS = 30_000;

export interface ChatAppDeps {
  store: ConversationStore;
  agent: AgentPort;
  registry: Registry;
  metrics: ChatMetrics;
  logger: Logger;
  historyMaxMessages?: number;
  /** Interval of the SSE heartbeat comment; 15 s unless a test says otherwise. */
  heartbeatMs?: number;
  /** {@link DEFAULT_STALLED_AFTER_MS} unless a test says otherwise. */
  stalledAfterMs?: number;
  now?: () => Date;
}

export interface ChatApp {
  /** The request listener to serve (`http.createServer(chat.app)`). */
  app: (req: IncomingMessage, res: ServerResponse) => void;
  /** The sends still running; a stopping service drains them before it closes the store. */
  inFlight: InFlight;
  /**
   * Every request taken and not yet answered, from its arrival to its response's end: a list or a create
   * waiting for the database, a request whose body is still arriving, an answer's whole stream. A
   * stopping service waits for them before it closes the connections, so none is cut without its answer.
   */
  requests: InFlight;
  /**
   * From now on every new request is answered 503 with `connection: close`, streams in progress go on.
   * A stopping service calls it first: closing the server only stops new connections, and a
   * keep-alive connection that was busy when the stop began would otherwise carry a next request.
   */
  refuseNewRequests(): void;
  /**
   * Watches the connections of `server`, the one serving `app`, until it closes, and destroys one whose
   * client stopped reading: an answer's stream is written without waiting for the browser, so one that
   * keeps its connection and reads nothing would otherwise hold the answer's bytes and the connection
   * forever (the response never finishes, so no server timeout applies). The destroy closes the
   * response, so the request ends for {@link requests}; the answer goes on and is stored, as when a
   * browser leaves. Logs a warning with the bytes dropped. Call it before the server listens.
   */
  watchStalledReaders(server: Server): void;
}

/** The ingress prefix; every route is also served without it. */
export const INGRESS_PREFIX = '/chat';

/**
 * An id the router cannot percent-decode (`/conversations/%zz`) is no conversation's id: 404 like any
 * other malformed id, not the 400 a bad path gets elsewhere. Only route parameters are decoded here,
 * so a URIError in this router is always the id.
 */
const undecodableIdNotFound: ErrorRequestHandler = (err: unknown, _req, _res, next) => {
  next(err instanceof URIError ? new HttpError(404, CONVERSATION_NOT_FOUND) : err);
};

/** Settles when the response has ended, or when its connection closed before it could. */
const responseClosed = (res: ServerResponse): Promise<void> => new Promise((resolve) => res.once('close', resolve));

export function createChatApp(deps: ChatAppDeps): ChatApp {
  const now = deps.now ?? (() => new Date());
  const inFlight = new InFlight();
  const requests = new InFlight();
  const sendMessage = sendMessageHandler({
    store: deps.store,
    agent: deps.agent,
    metrics: deps.metrics,
    logger: deps.logger,
    inFlight,
    historyMaxMessages: deps.historyMaxMessages ?? DEFAULT_HISTORY_MAX_MESSAGES,
    heartbeatMs: deps.heartbeatMs ?? DEFAULT_HEARTBEAT_MS,
    now,
  });

  const routes = express.Router();
  routes.get('/health', healthHandler);
  routes.get('/metrics', metricsHandler(deps.registry));
  const conversations = express.Router();
  conversations.use(refuseCrossSiteWrites, requireClaims(), jsonBody());
  conversations.post('/:id/messages', sendMessageRoute(sendMessage));
  conversations.use('/', conversationsRouter(deps.store, now));
  conversations.use(undecodableIdNotFound);
  routes.use('/conversations', conversations);

  let refusing = false;
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use((_req, res, next) => {
    if (!refusing) {
      next();
      return;
    }
    res.set('connection', 'close');
    sendError(res, 503, STOPPING);
  });
  app.use(INGRESS_PREFIX, routes);
  app.use(routes);
  app.use(notFoundHandler);
  app.use(errorHandler(deps.logger));
  const plainSend = plainSendHandler(sendMessage, deps.logger);
  return {
    app: (req, res) => {
      requests.track(responseClosed(res));
      const id = refusing ? undefined : plainSendIdOf(req);
      // A send another site made the browser post goes to Express, whose guard refuses it as it would anywhere.
      if (id === undefined || crossSiteRefusal(req) !== undefined) app(req, res);
      else plainSend(req, res, id);
    },
    inFlight,
    requests,
    refuseNewRequests: () => {
      refusing = true;
    },
    watchStalledReaders: (server) => {
      watchStalledConnections(server, {
        stalledAfterMs: deps.stalledAfterMs ?? DEFAULT_STALLED_AFTER_MS,
        onStalled: (unwritten) => deps.logger.warn({ unwritten }, 'client did not read its answer; connection destroyed'),
      });
    },
  };
}
