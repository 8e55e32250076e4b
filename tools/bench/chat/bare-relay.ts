/**
 * The chat benchmark's floor: a relay that does only what every relay must. It answers the calls the
 * benchmark makes, as the chat service answers them, and nothing more. It checks no claims, stores
 * nothing in a database and validates nothing:
 * - POST /chat/conversations: a new id, kept in memory;
 * - POST /chat/conversations/{id}/messages: asks the agent (AGENT_URL) and relays each token as a
 *   frame, then `done`; the answer is kept in memory;
 * - GET /chat/conversations/{id}: what was kept;
 * - GET /health and GET /metrics (no figures).
 * Any other call is a 500 `unexpected call`.
 *
 * `BENCH_CHAT_SERVICE=bare npm run bench:chat` measures it in place of the chat service, on the same
 * load and with the same figures. Whatever TTFT the bare relay adds is what this machine charges any
 * relay under that load. The rest of what chat adds is chat's own work: its conversation read, its
 * per-request work and its store.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Agent, request } from 'undici';
import { listen } from '../../../shared/lifecycle.js';

const agentUrl = process.env.AGENT_URL;
if (!agentUrl) throw new Error('AGENT_URL is required');
const dispatcher = new Agent({ keepAliveTimeout: 30_000, connections: null });
const kept = new Map<string, Array<{ role: 'user' | 'assistant'; content: string }>>();

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function json(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
}

/** Asks the agent and relays its token events as frames until its final event. */
async function relay(req: IncomingMessage, res: ServerResponse, messages: Array<{ role: 'user' | 'assistant'; content: string }>): Promise<void> {
  const { content } = JSON.parse(await bodyOf(req)) as { content: string };
  const answer = await request(`${agentUrl}/ask`, {
    dispatcher,
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'x-gateway-claims': String(req.headers['x-gateway-claims'] ?? '') },
    body: JSON.stringify({ question: content, history: [], stream: true }),
  });
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  let pending = '';
  let text = '';
  let id = 1;
  for await (const chunk of answer.body) {
    pending += (chunk as Buffer).toString('utf8');
    for (let end = pending.indexOf('\n\n'); end >= 0; end = pending.indexOf('\n\n')) {
      const event = pending.slice(0, end);
      pending = pending.slice(end + 2);
      if (!event.startsWith('data: ')) continue;
      const data = JSON.parse(event.slice('data: '.length)) as { type: string; text?: string };
      if (data.type === 'token' && data.text !== undefined) {
        text += data.text;
        res.write(`id: ${id++}\ndata: {"type":"token","text":${JSON.stringify(data.text)}}\n\n`);
      } else if (data.type === 'final') {
        messages.push({ role: 'user', content }, { role: 'assistant', content: text });
        res.end(`id: ${id++}\ndata: ${JSON.stringify({ type: 'done', message: { role: 'assistant', content: text } })}\n\n`);
      }
    }
  }
  if (!res.writableEnded) res.end(`id: ${id}\ndata: ${JSON.stringify({ type: 'error', error: 'agent_incomplete', message: 'the agent ended without its final event' })}\n\n`);
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = req.url ?? '';
  if (req.method === 'GET' && url === '/health') return json(res, 200, { status: 'ok' });
  if (req.method === 'GET' && url === '/metrics') {
    res.writeHead(200, { 'content-type': 'text/plain' }).end('');
    return;
  }
  if (req.method === 'POST' && url === '/chat/conversations') {
    const id = randomUUID();
    kept.set(id, []);
    return json(res, 201, { id });
  }
  const match = /^\/chat\/conversations\/([0-9a-f-]{36})(\/messages)?$/.exec(url);
  const messages = match ? kept.get(match[1]!) : undefined;
  if (messages && req.method === 'POST' && match?.[2]) return relay(req, res, messages);
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
  server.close(() => void dispatcher.close().then(() => process.exit(0)));
});
