/**
 * Starts the chat app in-process against the real MongoDB-wire server and a fake agent, and talks to
 * it the way a browser does: fetch, and `eventsource-parser` for the answer stream.
 */
import { createServer } from 'node:http';
import { ObjectId, type Collection, type Db, type Document } from 'mongodb';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { fetch } from 'undici';
import { encodeClaims } from '../../../../shared/claims.js';
import { silentLogger } from '../../../../shared/logger.js';
import { createRegistry, type Registry } from '../../../../shared/prom.js';
import { createChatApp, type ChatApp } from '../../../../cloud/chat/app.js';
import type { ConversationLockOptions } from '../../../../cloud/chat/conversation-lock.js';
import { HttpAgent } from '../../../../cloud/chat/http-agent.js';
import { createChatMetrics } from '../../../../cloud/chat/metrics.js';
import { conversationCollectionName, MongoConversationStore } from '../../../../cloud/chat/mongo-store.js';
import type { MessageWire } from '../../../../cloud/chat/wire.js';
import { closeServer, listen } from '../../../../shared/lifecycle.js';
import { jsonOrText } from '../../../support/http.js';
import { freshChatDatabase } from './mongo.js';
import { FakeAgent } from './fake-agent.js';

type Teardown = { teardown(fn: () => unknown): void };

export interface ChatUnderTest {
  url: string;
  agent: FakeAgent;
  /** The service's client of the fake agent, for a test that stops it as a stopping service does. */
  agentClient: HttpAgent;
  db: Db;
  store: MongoConversationStore;
  registry: Registry;
  chat: ChatApp;
}

export interface StartOptions {
  historyMaxMessages?: number;
  heartbeatMs?: number;
  agentUrl?: string;
  connectTimeoutMs?: number;
  idleTimeoutMs?: number;
  responseTimeoutMs?: number;
  lock?: Partial<ConversationLockOptions>;
  /** Share a database with another instance (a second replica). */
  db?: Db;
  /** What the store sees of the database, to watch or reorder its calls; the database itself if absent. */
  storeDb?: (db: Db) => Db;
}

/** The claims header of a user, as the mesh injects it. */
export function claimsOf(sub: string): string {
  return encodeClaims({ sub, accountName: `${sub}@acme.test`, memberships: [{ domainName: 'acme', role: 'member' }] });
}

export async function startChat(t: Teardown, options: StartOptions = {}): Promise<ChatUnderTest> {
  // Registered first, so it runs last (tap runs teardowns last-registered first): a failure here must
  // not skip the cleanups. A fake that fails loudly: a call nobody scripted, or a script nobody called.
  const agent = new FakeAgent();
  t.teardown(() => agent.verify());
  const db = options.db ?? (await freshChatDatabase(t)).db;
  // One teardown, run in reverse order of start and before the database's own (tap runs teardowns
  // last-registered first): running answers drain before anything they use closes.
  const cleanups: Array<() => unknown> = [];
  t.teardown(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });
  await agent.start();
  cleanups.push(() => agent.stop());
  const store = new MongoConversationStore(options.storeDb ? options.storeDb(db) : db, options.lock ? { lock: options.lock } : {});
  await store.start();
  cleanups.push(() => store.stop());
  const httpAgent = new HttpAgent({
    baseUrl: options.agentUrl ?? agent.url,
    connectTimeoutMs: options.connectTimeoutMs ?? 1_000,
    responseTimeoutMs: options.responseTimeoutMs ?? 5_000,
    idleTimeoutMs: options.idleTimeoutMs ?? 10_000,
  });
  cleanups.push(() => httpAgent.stop());
  const registry = createRegistry('chat', { defaults: false });
  const chat = createChatApp({
    store,
    agent: httpAgent,
    registry,
    metrics: createChatMetrics(registry),
    logger: silentLogger(),
    ...(options.historyMaxMessages !== undefined ? { historyMaxMessages: options.historyMaxMessages } : {}),
    ...(options.heartbeatMs !== undefined ? { heartbeatMs: options.heartbeatMs } : {}),
  });
  const server = createServer(chat.app);
  const port = await listen(server, 0, '127.0.0.1');
  cleanups.push(() => closeServer(server));
  cleanups.push(() => chat.inFlight.drain(5_000));
  return { url: `http://127.0.0.1:${port}`, agent, agentClient: httpAgent, db, store, registry, chat };
}

export interface JsonResponse {
  status: number;
  headers: Headers;
  body: unknown;
}

/** Calls a JSON route as `sub` (no claims header when sub is undefined). */
export async function call(url: string, method: string, path: string, sub: string | undefined, body?: unknown): Promise<JsonResponse> {
  const headers: Record<string, string> = {};
  if (sub !== undefined) headers['x-gateway-claims'] = claimsOf(sub);
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${url}${path}`, { method, headers, ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}) });
  const text = await res.text();
  return { status: res.status, headers: res.headers as unknown as Headers, body: text ? jsonOrText(text) : undefined };
}

export interface ConversationWire {
  id: string;
  userId: string;
  title: string;
  createdAt: string;
  updatedAt: string;
  messages?: MessageWire[];
  messageCount?: number;
}

export type { MessageWire };

export async function createConversation(url: string, sub: string, title?: string): Promise<ConversationWire> {
  const res = await call(url, 'POST', '/conversations', sub, title === undefined ? {} : { title });
  if (res.status !== 201) throw new Error(`create answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body as ConversationWire;
}

export async function getConversation(url: string, sub: string, id: string): Promise<ConversationWire> {
  const res = await call(url, 'GET', `/conversations/${id}`, sub);
  if (res.status !== 200) throw new Error(`get answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body as ConversationWire;
}

export type Frame =
  | { type: 'token'; text: string }
  | { type: 'done'; message: MessageWire }
  | { type: 'error'; error: string; message: string };

/** One parsed SSE event of the answer stream, with its `id:`. */
export interface ParsedFrame {
  id: string | undefined;
  frame: Frame;
}

export interface SendResult {
  status: number;
  headers: Headers;
  /** The JSON body when the answer is not a stream. */
  body?: unknown;
  frames: ParsedFrame[];
  comments: string[];
}

/**
 * An answer stream read incrementally, as a browser's fetch + SSE parser would. `nextFrame` waits for
 * the next frame; `abort` is the browser going away.
 */
export class OpenStream {
  readonly frames: ParsedFrame[] = [];
  readonly comments: string[] = [];
  readonly status: number;
  readonly headers: Headers;
  readonly ended: Promise<void>;
  private readonly controller: AbortController;
  private waiters: Array<() => void> = [];

  constructor(response: Response, controller: AbortController) {
    this.status = response.status;
    this.headers = response.headers;
    this.controller = controller;
    const parser = createParser({
      onEvent: (event: EventSourceMessage) => {
        this.frames.push({ id: event.id, frame: JSON.parse(event.data) as Frame });
        this.wake();
      },
      onComment: (comment) => {
        this.comments.push(comment);
        this.wake();
      },
    });
    const body = response.body;
    this.ended = (async () => {
      if (!body) return;
      const decoder = new TextDecoder();
      try {
        for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) parser.feed(decoder.decode(chunk, { stream: true }));
      } catch {
        // aborted by the test
      } finally {
        this.wake();
      }
    })();
  }

  /** Waits until `predicate` holds for what has arrived so far, or fails after `timeoutMs`. */
  async until(predicate: () => boolean, timeoutMs = 10_000): Promise<void> {
    const giveUpAt = Date.now() + timeoutMs;
    let streamEnded = false;
    void this.ended.then(() => {
      streamEnded = true;
    });
    while (!predicate()) {
      if (streamEnded) throw new Error('the stream ended before the expected frames arrived');
      const remaining = giveUpAt - Date.now();
      if (remaining <= 0) throw new Error('timed out waiting for frames');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(remaining, 200));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  abort(): void {
    this.controller.abort();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}

/** Starts a send and returns the stream as it arrives; a non-stream answer is read as JSON. */
export async function openSend(url: string, sub: string, id: string, body: unknown, prefix = ''): Promise<OpenStream | JsonResponse> {
  const controller = new AbortController();
  const response = await fetch(`${url}${prefix}/conversations/${id}/messages`, {
    method: 'POST',
    headers: { 'x-gateway-claims': claimsOf(sub), 'content-type': 'application/json', accept: 'text/event-stream' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal: controller.signal,
  });
  if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // keep text
    }
    return { status: response.status, headers: response.headers as unknown as Headers, body: parsed };
  }
  return new OpenStream(response as unknown as Response, controller);
}

/** Sends a message and reads the whole answer. */
export async function send(url: string, sub: string, id: string, content: unknown, prefix = ''): Promise<SendResult> {
  const opened = await openSend(url, sub, id, typeof content === 'string' ? { content } : content, prefix);
  if (!(opened instanceof OpenStream)) return { status: opened.status, headers: opened.headers, body: opened.body, frames: [], comments: [] };
  await opened.ended;
  return { status: opened.status, headers: opened.headers, frames: opened.frames, comments: opened.comments };
}

/** The terminal frame of a finished stream. */
export function terminalOf(result: { frames: ParsedFrame[] }): Frame | undefined {
  return result.frames[result.frames.length - 1]?.frame;
}

/** The text of the token frames, joined. */
export function answerOf(result: { frames: ParsedFrame[] }): string {
  return result.frames.map((f) => (f.frame.type === 'token' ? f.frame.text : '')).join('');
}

/** The collection holding the conversations of `owner` (the store spreads them over several). */
export function conversationsOf(db: Db, owner = 'ana'): Collection<Document> {
  return db.collection(conversationCollectionName(owner));
}

/**
 * Fills a conversation of `owner` with `count` stored messages (alternating user and assistant)
 * straight in the database, to test the cap without 50 round trips.
 */
export async function fillConversation(db: Db, id: string, count: number, owner = 'ana'): Promise<void> {
  const at = new Date();
  const messages = Array.from({ length: count }, (_, i) => ({
    id: new ObjectId().toHexString(),
    role: i % 2 === 0 ? 'user' : 'assistant',
    content: `message ${i}`,
    created_at: at,
  }));
  const filled = await conversationsOf(db, owner).updateOne({ _id: ObjectId.createFromHexString(id) }, { $set: { messages, message_count: count } });
  if (filled.matchedCount !== 1) throw new Error(`no conversation ${id} of ${owner} to fill`);
}

/**
 * Reads a counter or gauge value from the registry (0 when the series is absent). `series` picks one
 * series of a histogram, such as `<name>_count`.
 */
export async function metricValue(registry: Registry, name: string, labels: Record<string, string> = {}, series = name): Promise<number> {
  const metric = registry.getSingleMetric(name);
  if (!metric) return 0;
  const data = await metric.get();
  const match = data.values.find(
    (v) => Object.entries(labels).every(([k, value]) => (v.labels as Record<string, unknown>)[k] === value) && ('metricName' in v ? v.metricName === series : series === name),
  );
  return match?.value ?? 0;
}

/** How many observations a histogram holds (0 when the histogram is absent). */
export const histogramCount = (registry: Registry, name: string): Promise<number> => metricValue(registry, name, {}, `${name}_count`);

/** Polls `condition` every 10 ms until it holds; fails naming `what` after `timeoutMs`. */
export async function until(condition: () => Promise<boolean> | boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const giveUpAt = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > giveUpAt) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
