/**
 * The agent wire client against a raw TCP agent on loopback that answers each request with scripted
 * bytes, written in pieces as small as one byte, so every framing and every split is read as a real
 * socket delivers it.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { AgentWire, AgentWireError, MAX_HEAD_BYTES, type ExchangeHandler } from '../../../cloud/chat/agent-wire.js';
import { listen } from '../../../shared/lifecycle.js';
import { RawAgent } from './support/raw-agent.js';

/** Splits a string into one-byte writes. */
const bytewise = (text: string) => [...Buffer.from(text, 'latin1')].map((byte) => Buffer.from([byte]));

interface Outcome {
  status?: number;
  headers?: string[];
  body: string;
  completed: boolean;
  error?: Error;
}

/** Sends one request and collects what the handler heard. */
function exchange(wire: AgentWire, headers: Array<[string, string]> = [], body = '{"question":"q"}'): Promise<Outcome> {
  return new Promise((resolve) => {
    const outcome: Outcome = { body: '', completed: false };
    const chunks: Buffer[] = [];
    const handler: ExchangeHandler = {
      onConnect: () => undefined,
      onHeaders: (status, raw) => {
        outcome.status = status;
        outcome.headers = raw;
      },
      // Copied: the buffer is only valid during the call.
      onData: (chunk) => chunks.push(Buffer.from(chunk)),
      onComplete: () => {
        outcome.completed = true;
        outcome.body = Buffer.concat(chunks).toString('utf8');
        resolve(outcome);
      },
      onError: (err) => {
        outcome.error = err;
        outcome.body = Buffer.concat(chunks).toString('utf8');
        resolve(outcome);
      },
    };
    wire.dispatch({ path: '/ask', headers, body }, handler);
  });
}

async function setup(t: Test, options: { headersTimeoutMs?: number } = {}): Promise<{ agent: RawAgent; wire: AgentWire }> {
  const agent = await new RawAgent().start(t);
  const wire = new AgentWire({ origin: agent.origin, connectTimeoutMs: 1_000, headersTimeoutMs: options.headersTimeoutMs ?? 5_000 });
  t.teardown(() => wire.stop());
  return { agent, wire };
}

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls until `condition` holds; the test's own timeout bounds the wait. */
async function waitUntil(condition: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; !condition(); await pause(20)) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
  }
}

const CHUNKED_HEAD = 'HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n';

t.test('the request on the wire: POST, host, length, and header values byte for byte', async (t) => {
  const { agent, wire } = await setup(t);
  agent.reply({ pieces: ['HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok'] });
  const outcome = await exchange(wire, [['x-gateway-claims', 'caf\u00e9+/=']], '{"question":"d\u00e9j\u00e0"}');
  t.equal(outcome.body, 'ok');
  const [seen] = agent.requests;
  t.match(seen?.head, /^POST \/ask HTTP\/1\.1\r\n/);
  t.match(seen?.head, new RegExp(`\\r\\nhost: 127\\.0\\.0\\.1:${agent.port}\\r\\n`));
  t.match(seen?.head, /\r\ncontent-length: 21\r\n/, 'the length counts UTF-8 bytes');
  t.match(seen?.head, /\r\nx-gateway-claims: caf\u00e9\+\/=(\r\n|$)/, 'a latin1 header value goes out as the same bytes');
  t.equal(seen?.body, '{"question":"d\u00e9j\u00e0"}');
});

t.test('a header value that cannot go on the wire as given is refused before anything is sent', async (t) => {
  const { agent, wire } = await setup(t);
  t.throws(() => wire.dispatch({ path: '/ask', headers: [['x-gateway-claims', 'a\r\nx-evil: 1']], body: '{}' }, { onConnect() {}, onHeaders() {}, onData() {}, onComplete() {}, onError() {} }), TypeError);
  t.throws(() => wire.dispatch({ path: '/ask', headers: [['x-gateway-claims', '\u0100']], body: '{}' }, { onConnect() {}, onHeaders() {}, onData() {}, onComplete() {}, onError() {} }), TypeError);
  await pause(50);
  t.equal(agent.connections, 0, 'no connection was opened');
});

t.test('a chunked body, one byte per write, with chunk extensions and trailers: read whole, connection reused', async (t) => {
  const { agent, wire } = await setup(t);
  const response = `${CHUNKED_HEAD}5;name=value\r\nhello\r\n7\r\n, world\r\n0\r\nx-trailer: yes\r\n\r\n`;
  agent.reply({ pieces: bytewise(response) }, { pieces: [response] });
  const first = await exchange(wire);
  t.same([first.status, first.body, first.completed], [200, 'hello, world', true]);
  t.same(first.headers?.slice(0, 2), ['content-type', 'text/event-stream'], 'header names lowercased, values trimmed');
  const second = await exchange(wire);
  t.equal(second.body, 'hello, world');
  t.same(
    agent.requests.map((r) => r.connection),
    [1, 1],
    'both requests on one connection',
  );
});

t.test('a Content-Length body and an interim 100 response', async (t) => {
  const { agent, wire } = await setup(t);
  agent.reply({ pieces: ['HTTP/1.1 100 Continue\r\n\r\n', 'HTTP/1.1 200 OK\r\ncontent-length: 11\r\n\r\nhello', ' world'] });
  const outcome = await exchange(wire);
  t.same([outcome.status, outcome.body, outcome.completed], [200, 'hello world', true], 'the interim response is skipped');
});

t.test('a body read until the agent closes: complete at the close, the connection is not reused', async (t) => {
  const { agent, wire } = await setup(t);
  agent.reply({ pieces: ['HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n', 'data: 1\n\n', 'data: 2\n\n'], close: true }, { pieces: ['HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n'] });
  const first = await exchange(wire);
  t.same([first.body, first.completed], ['data: 1\n\ndata: 2\n\n', true]);
  await exchange(wire);
  t.not(agent.requests[1]?.connection, agent.requests[0]?.connection, 'a new connection for the next request');
});

t.test('connection: close, an HTTP/1.0 answer, a keep-alive timeout under a second, bytes after the body: never reused', async (t) => {
  const { agent, wire } = await setup(t);
  agent.reply(
    { pieces: ['HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 1\r\n\r\na'] },
    { pieces: ['HTTP/1.0 200 OK\r\ncontent-length: 1\r\n\r\nb'] },
    { pieces: ['HTTP/1.1 200 OK\r\nkeep-alive: timeout=1\r\ncontent-length: 1\r\n\r\nc'] },
    { pieces: ['HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\ndHTTP/1.1 200 OK\r\n'] },
    { pieces: ['HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\ne'] },
  );
  const bodies: string[] = [];
  for (let i = 0; i < 5; i++) bodies.push((await exchange(wire)).body);
  t.same(bodies, ['a', 'b', 'c', 'd', 'e']);
  t.equal(new Set(agent.requests.map((r) => r.connection)).size, 5, 'each request on a connection of its own');
});

t.test('malformed responses fail the exchange as malformed and close the connection', async (t) => {
  const cases: Array<[string, string | Buffer]> = [
    ['a bad status line', 'HTTX/1.1 200 OK\r\n\r\n'],
    ['a bad header line', 'HTTP/1.1 200 OK\r\nno colon here\r\n\r\n'],
    ['conflicting lengths', 'HTTP/1.1 200 OK\r\ncontent-length: 3\r\ncontent-length: 4\r\n\r\nabcd'],
    ['a bad chunk size', `${CHUNKED_HEAD}zz\r\nhello\r\n`],
    ['a chunk longer than its size', `${CHUNKED_HEAD}2\r\nhello\r\n`],
    ['an upgrade nobody asked for', 'HTTP/1.1 101 Switching Protocols\r\n\r\n'],
    ['a head over the limit', `HTTP/1.1 200 OK\r\nx-big: ${'a'.repeat(MAX_HEAD_BYTES)}\r\n\r\n`],
  ];
  for (const [name, response] of cases) {
    const { agent, wire } = await setup(t);
    agent.reply({ pieces: [response] });
    const outcome = await exchange(wire);
    t.ok(outcome.error instanceof AgentWireError && outcome.error.code === 'malformed', `${name}: malformed`);
    t.notOk(outcome.completed, `${name}: not complete`);
  }
});

t.test('a pooled connection the agent drops on the next request: sent once more on a new connection', async (t) => {
  const { agent, wire } = await setup(t);
  agent.reply({ pieces: ['HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nfirst'] }, { drop: true, pieces: [] }, { pieces: ['HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nsecond'] });
  t.equal((await exchange(wire)).body, 'first');
  const second = await exchange(wire);
  t.same([second.body, second.completed], ['second', true]);
  const [a, b, c] = agent.requests.map((r) => r.connection);
  t.equal(a, b, 'the second request went on the pooled connection');
  t.not(c, a, 'the retry went on another connection');
});

t.test('a new connection dropped before any byte is not retried: the exchange fails as closed', async (t) => {
  const { agent, wire } = await setup(t);
  agent.reply({ drop: true, pieces: [] });
  const outcome = await exchange(wire);
  t.ok(outcome.error instanceof AgentWireError && outcome.error.code === 'closed');
  t.equal(agent.requests.length, 1, 'sent once');
});

t.test('a connection dropped mid-body fails the exchange after the bytes it delivered', async (t) => {
  const { agent, wire } = await setup(t);
  agent.reply({ pieces: [`${CHUNKED_HEAD}5\r\nhello\r\n`], close: true });
  const outcome = await exchange(wire);
  t.equal(outcome.body, 'hello');
  t.ok(outcome.error instanceof AgentWireError && outcome.error.code === 'closed');
});

t.test('no head in time: headers_timeout; a refused port: connect_failed', async (t) => {
  const { agent, wire } = await setup(t, { headersTimeoutMs: 200 });
  agent.reply({ silent: true, pieces: [] });
  const silent = await exchange(wire);
  t.ok(silent.error instanceof AgentWireError && silent.error.code === 'headers_timeout');

  const closed = new RawAgent();
  await closed.start(t);
  await closed.close();
  const refused = new AgentWire({ origin: closed.origin, connectTimeoutMs: 1_000, headersTimeoutMs: 1_000 });
  t.teardown(() => refused.stop());
  const outcome = await exchange(refused);
  t.ok(outcome.error instanceof AgentWireError && outcome.error.code === 'connect_failed');
});

t.test('a question needing a new connection opens a spare beside it; the next question takes the spare, and an untaken spare is closed', async (t) => {
  const { agent, wire } = await setup(t);
  agent.reply({ pieces: ['HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\na'] }, { pieces: ['HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\nb'] });
  // Two at once: the first opens a connection and a spare; the second takes the spare.
  const [first, second] = await Promise.all([exchange(wire), exchange(wire)]);
  t.same([first.body, second.body].sort(), ['a', 'b']);
  const used = new Set(agent.requests.map((r) => r.connection));
  t.equal(used.size, 2, 'two connections carried the two requests');
  const opened = agent.connections;
  t.ok(opened >= 2 && opened <= 3, `a spare at most beside them (${opened} opened)`);
  const spares = Array.from({ length: opened }, (_, i) => i + 1).filter((id) => !used.has(id));
  await waitUntil(() => spares.every((id) => agent.closedIds.has(id)), 'every untaken spare closed by the client');
  t.same(spares.filter((id) => !agent.closedIds.has(id)), [], 'no untaken spare left open');
});

t.test('a lone question on a new connection opens one spare, which the client closes when nobody takes it', async (t) => {
  const { agent, wire } = await setup(t);
  agent.reply({ pieces: ['HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\na'] });
  t.equal((await exchange(wire)).body, 'a');
  t.equal(agent.connections, 2, 'the connection the question went on, and a spare beside it');
  const spare = agent.requests[0]?.connection === 1 ? 2 : 1;
  await waitUntil(() => agent.closedIds.has(spare), 'the untaken spare closed by the client');
  t.ok(agent.closedIds.has(spare), 'the untaken spare is closed');
  t.equal(agent.requests.length, 1, 'nothing was sent on the spare');
});

t.test('stop: an exchange in flight fails as stopped, and new ones too', async (t) => {
  const { agent, wire } = await setup(t);
  agent.reply({ silent: true, pieces: [] });
  const pending = exchange(wire);
  for (let i = 0; i < 100 && agent.requests.length === 0; i++) await pause(10);
  wire.stop();
  const outcome = await pending;
  t.ok(outcome.error instanceof AgentWireError && outcome.error.code === 'stopped');
  const after = await exchange(wire);
  t.ok(after.error instanceof AgentWireError && after.error.code === 'stopped');
});

t.test('an https agent: the same exchange over TLS, its connection reused', async (t) => {
  // A certificate for 127.0.0.1 made for this test, trusted through the client's TLS options.
  const dir = mkdtempSync(join(tmpdir(), 'lintel-agent-tls-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
  const cert = readFileSync(join(dir, 'cert.pem'));
  const served = new Set<unknown>();
  const server = createHttpsServer({ key: readFileSync(join(dir, 'key.pem')), cert }, (req, res) => {
    served.add(req.socket);
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"type":"token","text":"over "}\n\n');
      res.end('data: {"type":"token","text":"tls"}\n\n');
    });
  });
  const port = await listen(server, 0, '127.0.0.1');
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  const wire = new AgentWire({ origin: new URL(`https://127.0.0.1:${port}`), connectTimeoutMs: 2_000, headersTimeoutMs: 5_000, tls: { ca: cert } });
  t.teardown(() => wire.stop());
  const first = await exchange(wire);
  t.same([first.status, first.completed], [200, true]);
  t.equal(first.body, 'data: {"type":"token","text":"over "}\n\ndata: {"type":"token","text":"tls"}\n\n');
  const second = await exchange(wire);
  t.equal(second.body, first.body);
  t.equal(served.size, 1, 'both requests on one connection');

  const untrusted = new AgentWire({ origin: new URL(`https://127.0.0.1:${port}`), connectTimeoutMs: 2_000, headersTimeoutMs: 5_000 });
  t.teardown(() => untrusted.stop());
  const refused = await exchange(untrusted);
  t.ok(refused.error instanceof AgentWireError && refused.error.code === 'connect_failed', 'a certificate nobody trusts is refused');
});
