/**
 * A fake question-answering agent (an outside service): a real HTTP server on 127.0.0.1 port 0 that
 * answers POST /ask with SSE as CONTRACTS.md says, `{"type":"token","text"}` per token and then
 * `{"type":"final","citations"}`. Each call takes the next script; a call nobody scripted, or any other
 * route, answers 500 and is recorded in `unexpected`. Teardown fails on either, or on a script left unused.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { closeServer, listen } from '../../../../shared/lifecycle.js';
import type { Teardown } from '../../../support/stack.js';

export interface AgentScript {
  tokens: string[];
  citations: unknown[];
  /** After this many tokens, wait for `release` before the rest. */
  holdAfter?: number;
  release?: Promise<void>;
}

export interface AgentCall {
  headers: IncomingMessage['headers'];
  body: unknown;
}

export interface FakeAgent {
  url: string;
  calls: AgentCall[];
  unexpected: string[];
  expect(script: AgentScript): void;
}

export async function startFakeAgent(t: Teardown): Promise<FakeAgent> {
  const scripts: AgentScript[] = [];
  const calls: AgentCall[] = [];
  const unexpected: string[] = [];
  const open = new Set<ServerResponse>();

  async function answer(script: AgentScript, res: ServerResponse): Promise<void> {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.flushHeaders();
    const send = (event: unknown) => res.write(`data: ${JSON.stringify(event)}\n\n`);
    for (const [i, text] of script.tokens.entries()) {
      if (i === script.holdAfter && script.release) await script.release;
      if (res.destroyed) return;
      send({ type: 'token', text });
    }
    send({ type: 'final', citations: script.citations });
    res.end();
  }

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const script = req.method === 'POST' && req.url === '/ask' ? scripts.shift() : undefined;
      if (script === undefined) {
        unexpected.push(`${req.method} ${req.url} ${text.slice(0, 200)}`);
        res.writeHead(500, { 'content-type': 'application/json' }).end('{"type":"Internal Server Error","message":"fake agent: unexpected call"}');
        return;
      }
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // kept as text; the test's assertion on the body shows it
      }
      calls.push({ headers: req.headers, body });
      open.add(res);
      res.on('close', () => open.delete(res));
      void answer(script, res);
    });
  });
  const port = await listen(server, 0, '127.0.0.1');
  t.teardown(async () => {
    for (const res of open) res.destroy();
    const closing = closeServer(server);
    server.closeAllConnections();
    await closing;
    if (unexpected.length > 0) throw new Error(`the fake agent got unexpected calls: ${unexpected.join(' | ')}`);
    if (scripts.length > 0) throw new Error(`${scripts.length} scripted agent answers were never asked for`);
  });
  return { url: `http://127.0.0.1:${port}`, calls, unexpected, expect: (script) => void scripts.push(script) };
}
