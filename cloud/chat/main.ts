/**
 * The chat service's composition root: reads the environment, connects MongoDB and the agent client,
 * serves HTTP, and on SIGTERM stops taking requests, lets running answers finish and be stored and
 * every request taken be answered, then closes its connections.
 */
import { createServer, type Server } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { MongoClient } from 'mongodb';
import { describeError } from '../../shared/errors.js';
import { configOrExit, listen, runUntilSignal } from '../../shared/lifecycle.js';
import { createLogger } from '../../shared/logger.js';
import { createRegistry } from '../../shared/prom.js';
import { createChatApp } from './app.js';
import { readChatConfig, type ChatConfig } from './config.js';
import { HttpAgent } from './http-agent.js';
import { createChatMetrics } from './metrics.js';
import { MongoConversationStore } from './mongo-store.js';

/** How long a stopping service waits for running answers before it aborts them. */
const DRAIN_MS = 3_000;

/** How long a stop may take before runUntilSignal ends the process with 1. */
const STOP_DEADLINE_MS = 8_000;

/**
 * What the stop keeps of its deadline after the last answer's wait: closing the connections, releasing
 * the leases still held and closing MongoDB.
 */
const CLOSE_MARGIN_MS = 1_500;

/**
 * How long an idle browser or ingress connection stays open for its next request. Longer than the
 * usual proxy idle timeouts (60 s), so a proxy never sends a request on a connection this service is
 * closing, and a client sending again within a minute skips the TCP handshake.
 */
const KEEP_ALIVE_MS = 65_000;

/**
 * How far V8 lets the old generation grow past what survived the last full collection before it
 * starts the next one: 300 % (up to four times the live heap) instead of V8's adaptive 10 to 100 %.
 * Every answer's state (its request, response, agent call and reader) lives for the whole answer, so it
 * is promoted to the old generation; with the adaptive growth, a burst of new answers (200 in a second)
 * started a full collection every two seconds or so. Each one's concurrent marking walked the whole
 * heap (about 25 MB, 70 to 120 ms of CPU on V8's helper threads) on cores the database, the agent and
 * the browsers' connections share, and its pauses (up to 17 ms) fell into answers' time to first
 * token. The price is a heap up to four times the live one between collections (about 100 MB here).
 * V8 reads the factor each time it sets the next limit, so setting it at start is enough.
 */
const HEAP_GROWING_PERCENT = 300;

class ChatService {
  private readonly config: ChatConfig;
  private readonly logger;
  private readonly mongo: MongoClient;
  private readonly agent: HttpAgent;
  private readonly store: MongoConversationStore;
  private readonly chat;
  private readonly server: Server;

  constructor(config: ChatConfig) {
    this.config = config;
    this.logger = createLogger('chat', { level: config.LOG_LEVEL });
    this.mongo = new MongoClient(config.MONGO_URI, { serverSelectionTimeoutMS: 5_000 });
    this.agent = new HttpAgent({
      baseUrl: config.AGENT_URL,
      connectTimeoutMs: config.AGENT_CONNECT_TIMEOUT_MS,
      responseTimeoutMs: config.AGENT_RESPONSE_TIMEOUT_MS,
      idleTimeoutMs: config.AGENT_IDLE_TIMEOUT_MS,
    });
    this.store = new MongoConversationStore(this.mongo.db());
    const registry = createRegistry('chat');
    this.chat = createChatApp({
      store: this.store,
      agent: this.agent,
      registry,
      metrics: createChatMetrics(registry),
      logger: this.logger,
      historyMaxMessages: config.HISTORY_MAX_MESSAGES,
    });
    this.server = createServer({ keepAliveTimeout: KEEP_ALIVE_MS }, this.chat.app);
    this.server.headersTimeout = KEEP_ALIVE_MS + 1_000;
  }

  async start(): Promise<void> {
    await this.mongo.connect();
    const { moved, ownerless } = await this.store.start();
    if (moved > 0) this.logger.info({ moved }, "conversations of the single collection moved to their owners' collections");
    if (ownerless > 0) this.logger.warn({ ownerless }, 'conversations without an owner left in the single collection');
    // Ends with the server's close at stop.
    this.chat.watchStalledReaders(this.server);
    const port = await listen(this.server, this.config.PORT);
    this.logger.info({ port, historyMaxMessages: this.config.HISTORY_MAX_MESSAGES }, 'chat listening');
  }

  async stop(): Promise<void> {
    const answersEndBy = Date.now() + STOP_DEADLINE_MS - CLOSE_MARGIN_MS;
    // Not closeServer: its forced close after 2 s would cut answer streams before the drain ends, and
    // their browsers would get neither `done` nor `error`. close() stops taking connections and closes
    // the idle ones; the others keep theirs until the request they carry is answered.
    this.chat.refuseNewRequests();
    const closing = new Promise<void>((resolve) => this.server.close(() => resolve()));
    const drainEndsBy = Date.now() + DRAIN_MS;
    await this.chat.inFlight.drain(DRAIN_MS);
    // A send whose body is still arriving has not begun: in the same time, it gets its answer rather
    // than the 503 the closed agent client would give it.
    await this.chat.requests.drain(Math.max(0, drainEndsBy - Date.now()));
    if (this.chat.inFlight.size > 0) this.logger.warn({ running: this.chat.inFlight.size }, 'aborting answers still streaming');
    // An answer still waiting for its conversation's lock (up to 15 s) would outlast the stop deadline:
    // it gives up now, storing nothing, and its stream ends with an error frame.
    this.store.abandonLockWaits();
    await this.agent.stop();
    // The aborted answers and the abandoned waits end at once, each with its error frame. An answer
    // already storing its exchange (holding the lease, on a loaded database) ends when the write does,
    // with `done`: closing its connection before that would cut it without a last frame. So the wait is
    // for the sends themselves, up to what the deadline leaves.
    const ended = await this.chat.inFlight.drain(Math.max(0, answersEndBy - Date.now()));
    // So is every other request taken before the stop: a list, a create, a rename or a delete waiting
    // for the database (as they do on a loaded one), a body still arriving. Cut, its browser would get a
    // reset while a create still landed, and a retry would create the conversation twice.
    const answered = await this.chat.requests.drain(Math.max(0, answersEndBy - Date.now()));
    if (!ended) this.logger.warn({ running: this.chat.inFlight.size }, 'closing the connections of answers still being stored');
    else if (!answered) this.logger.warn({ unanswered: this.chat.requests.size }, 'closing the connections of requests still unanswered');
    // What remains are connections kept alive for a next request (and any request outliving the deadline).
    this.server.closeAllConnections();
    await closing;
    await this.store.stop();
    await this.mongo.close();
  }
}

setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
const config: ChatConfig = configOrExit(readChatConfig);
const logger = createLogger('chat', { level: config.LOG_LEVEL });
try {
  await runUntilSignal(new ChatService(config), logger, STOP_DEADLINE_MS);
} catch (err) {
  // MongoDB unreachable, or the port taken: say so in one safe line, not a stack trace (the driver's
  // error dumps its whole topology).
  logger.fatal({ error: describeError(err), port: config.PORT }, 'chat failed to start');
  process.exit(1);
}
