/**
 * The chat benchmark's floor: a relay that does only what every relay must. It answers the calls the
 * benchmark makes, as the chat service answers them, and nothing more. It checks no claims, stores
 * nothing in a database and validates nothing:
 * - POST /chat/conversations: a new id, kept in memory;
 * - POST /chat/conversations/{id}/messages: asks the agent (AGENT_URL) through the chat service's own
 *   agent adapter (`cloud/chat/http-agent.ts`) and relays each token as a frame, written to the
 *   connection as one HTTP/1.1 chunk as the service writes it, then `done`; the answer is kept in memory;
 * - GET /chat/conversations/{id}: what was kept;
 * - GET /health and GET /metrics (no figures).
 * Any other call is a 500 `unexpected call`.
 *
 * `BENCH_CHAT_SERVICE=bare npm run bench:chat` measures it in place of the chat service, on the same
 * load and with the same figures. Whatever TTFT the bare relay adds is what this machine charges any
 * relay under that load. The rest of what chat adds is chat's own work: its conversation read, its
 * per-request work and its store.
 *
 * With BARE_RELAY_STORE=mongo (`BENCH_CHAT_SERVICE=bare-store`) it also does the store work the seed
 * asks of every send, through the chat service's own store (`cloud/chat/mongo-store.ts`) on MONGO_URI:
 * the conversation is created there, read (owner, cap and history) before the agent is called, and the
 * exchange appended at the agent's final event, before `done`. The sub is read from the claims header
 * without checking it. This is the floor of any relay that follows the seed on this store and machine;
 * what chat adds beyond it is its HTTP framework, claims check, validation and metrics.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { MongoClient, ObjectId } from 'mongodb';
import { DEFAULT_TITLE, hasRoomForExchange, seedsTitle, titleFromQuestion, type HistoryTurn } from '../../../cloud/chat/conversation.js';
import { DEFAULT_AGENT_TIMEOUTS, HttpAgent } from '../../../cloud/chat/http-agent.js';
import { MongoConversationStore } from '../../../cloud/chat/mongo-store.js';
import { httpChunk } from '../../../cloud/chat/sse.js';
import { decodeClaims } from '../../../shared/claims.js';
import { listen } from '../../../shared/lifecycle.js';

const agentUrl = process.env.AGENT_URL;
if (!agentUrl) throw new Error('AGENT_URL is required');
const agent = new HttpAgent({ baseUrl: agentUrl, ...DEFAULT_AGENT_TIMEOUTS });
const kept = new Map<string, Array<{ role: 'user' | 'assistant'; content: string }>>();

/** Messages of history sent to the agent: the service's default HISTORY_MAX_MESSAGES. */
const HISTORY_MESSAGES = 10;
const storeMode = process.env.BARE_RELAY_STORE ?? 'none';
if (storeMode !== 'none' && storeMode !== 'mongo') throw new Error(`BARE_RELAY_STORE must be none or mongo, not ${storeMode}`);
const mongo = storeMode === 'mongo' ? new MongoClient(process.env.MONGO_URI ?? 'mongodb://127.0.0.1:57017/lintel', { serverSelectionTimeoutMS: 5_000 }) : undefined;
const store = mongo ? new MongoConversationStore(mongo.db()) : undefined;
if (mongo && store) {
  await mongo.connect();
  await store.start();
}

/** The sub of the claims header, unchecked beyond decoding (the bare relay checks no claims). */
function subOf(req: IncomingMessage): string {
  const decoded = decodeClaims(req.headers['x-gateway-claims']);
  return decoded.ok ? decoded.claims.sub : '';
}

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function json(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
}

/** Asks the agent and relays its tokens as frames until its final event. */
async function relay(req: IncomingMessage, res: ServerResponse, conversationId: string, messages: Array<{ role: 'user' | 'assistant'; content: string }>): Promise<void> {
  const { content } = JSON.parse(await bodyOf(req)) as { content: string };
  const receivedAt = new Date();
  const sub = store ? subOf(req) : '';
  let history: HistoryTurn[] = [];
  let seededTitle: string | undefined;
  if (store) {
    const context = await store.sendContext(conversationId, sub, HISTORY_MESSAGES);
    if (!context) return json(res, 404, { error: 'conversation not found' });
    if (!hasRoomForExchange(context.messageCount)) return json(res, 409, { error: 'conversation is full' });
    history = context.recent;
    seededTitle = seedsTitle(context) ? titleFromQuestion(content) : undefined;
  }
  const answer = await agent.ask({ question: content, history, claimsHeader: String(req.headers['x-gateway-claims'] ?? '') });
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  res.flushHeaders();
  const socket = res.socket;
  socket?.setNoDelay(true);
  let frameId = 1;
  const frame = (text: string) => socket?.write(httpChunk(text));
  let text = '';
  try {
    await answer.read((token, literal) => {
      text += token;
      frame(`id: ${frameId++}\ndata: {"type":"token","text":${literal}}\n\n`);
    });
  } catch (err) {
    frame(`id: ${frameId++}\ndata: ${JSON.stringify({ type: 'error', error: 'agent_failed', message: err instanceof Error ? err.message : String(err) })}\n\n`);
    res.end();
    return;
  } finally {
    answer.cancel();
  }
  if (store) {
    const at = new Date();
    const question = { id: new ObjectId().toHexString(), role: 'user' as const, content, createdAt: receivedAt };
    const reply = { id: new ObjectId().toHexString(), role: 'assistant' as const, content: text, createdAt: at };
    const outcome = await store.appendExchange(conversationId, sub, seededTitle === undefined ? { question, answer: reply, at } : { question, answer: reply, at, seededTitle });
    if (outcome !== 'appended') {
      frame(`id: ${frameId++}\ndata: ${JSON.stringify({ type: 'error', error: `conversation_${outcome}`, message: 'not stored' })}\n\n`);
      res.end();
      return;
    }
  }
  messages.push({ role: 'user', content }, { role: 'assistant', content: text });
  frame(`id: ${frameId++}\ndata: ${JSON.stringify({ type: 'done', message: { role: 'assistant', content: text } })}\n\n`);
  res.end();
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = req.url ?? '';
  if (req.method === 'GET' && url === '/health') return json(res, 200, { status: 'ok' });
  if (req.method === 'GET' && url === '/metrics') {
    res.writeHead(200, { 'content-type': 'text/plain' }).end('');
    return;
  }
  if (req.method === 'POST' && url === '/chat/conversations') {
    const id = store ? (await store.create(subOf(req), DEFAULT_TITLE, new Date())).id : randomUUID();
    kept.set(id, []);
    return json(res, 201, { id });
  }
  const match = /^\/chat\/conversations\/([0-9a-f]{24}|[0-9a-f-]{36})(\/messages)?$/.exec(url);
  const messages = match ? kept.get(match[1]!) : undefined;
  if (messages && req.method === 'POST' && match?.[2]) return relay(req, res, match![1]!, messages);
  if (messages && req.method === 'GET' && !match?.[2]) return json(res, 200, { id: match![1], messages });
  json(res, 500, { error: 'unexpected call', method: req.method, url });
}

const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  handle(req, res).catch((err: unknown) => {
    if (!res.headersSent) json(res, 500, { error: err instanceof Error ? err.message : String(err) });
    else res.destroy();
  });
});
await listen(server, Number(process.env.PORT ?? 0));
process.on('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => void agent.stop().then(async () => {
    await store?.stop();
    await mongo?.close();
    process.exit(0);
  }));
});
