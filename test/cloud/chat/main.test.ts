import t from 'tap';
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { once } from 'node:events';
import { ConfigError } from '../../../shared/env.js';
import { listen } from '../../../shared/lifecycle.js';
import { readChatConfig } from '../../../cloud/chat/config.js';
import { FakeAgent } from './support/fake-agent.js';
import { claimsOf } from './support/harness.js';
import { freshChatDatabase } from './support/mongo.js';

t.test('config: defaults, and every problem reported at once', async (t) => {
  const config = readChatConfig({ MONGO_URI: 'mongodb://127.0.0.1:57017/chat' });
  t.match(config, { PORT: 3000, AGENT_URL: 'http://agent:3000', HISTORY_MAX_MESSAGES: 10 });
  try {
    readChatConfig({ PORT: 'eighty', MONGO_URI: 'postgres://x', AGENT_URL: 'ftp://agent', HISTORY_MAX_MESSAGES: '-1' });
    t.fail('expected a ConfigError');
  } catch (err) {
    t.type(err, ConfigError);
    t.same((err as ConfigError).problems, [
      'PORT: expected an integer, got "eighty"',
      'MONGO_URI: not a mongodb:// or mongodb+srv:// URL',
      'AGENT_URL: not a http:// or https:// URL',
      'HISTORY_MAX_MESSAGES: expected at least 0, got -1',
    ]);
  }
  t.throws(() => readChatConfig({}), /MONGO_URI: required but not set/);
});

async function freePort(): Promise<number> {
  const server = createServer();
  const port = await listen(server, 0, '127.0.0.1');
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

t.test('npm run chat: serves with its env, answers a send end to end, stops cleanly on SIGTERM', async (t) => {
  const { uri } = await freshChatDatabase(t);
  const agent = await new FakeAgent().start();
  t.teardown(() => agent.stop());
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'cloud/chat/main.ts'], {
    env: { ...process.env, PORT: String(port), MONGO_URI: uri, AGENT_URL: agent.url, HISTORY_MAX_MESSAGES: '4', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const base = `http://127.0.0.1:${port}`;
  let up = false;
  for (let i = 0; i < 300 && !up && child.exitCode === null; i++) {
    up = await fetch(`${base}/health`).then((r) => r.ok, () => false);
    if (!up) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  t.ok(up, `the service came up (${output})`);

  const created = await fetch(`${base}/chat/conversations`, { method: 'POST', headers: { 'x-gateway-claims': claimsOf('ana') } });
  const { id } = (await created.json()) as { id: string };
  agent.expect({ tokens: ['hello'] });
  const sent = await fetch(`${base}/chat/conversations/${id}/messages`, {
    method: 'POST',
    headers: { 'x-gateway-claims': claimsOf('ana'), 'content-type': 'application/json' },
    body: JSON.stringify({ content: 'hi' }),
  });
  t.match(await sent.text(), /"type":"done"/);

  child.kill('SIGTERM');
  const [code] = (await once(child, 'exit')) as [number | null];
  t.equal(code, 0, 'exit 0 after SIGTERM');
});

t.test('SIGTERM while an answer streams: the answer finishes, is stored, then the process exits 0', async (t) => {
  const { uri, db } = await freshChatDatabase(t);
  const agent = await new FakeAgent().start();
  t.teardown(() => agent.stop());
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'cloud/chat/main.ts'], {
    env: { ...process.env, PORT: String(port), MONGO_URI: uri, AGENT_URL: agent.url, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'ignore'],
  });
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const base = `http://127.0.0.1:${port}`;
  let up = false;
  for (let i = 0; i < 300 && !up && child.exitCode === null; i++) {
    up = await fetch(`${base}/health`).then((r) => r.ok, () => false);
    if (!up) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const created = await fetch(`${base}/conversations`, { method: 'POST', headers: { 'x-gateway-claims': claimsOf('ana') } });
  const { id } = (await created.json()) as { id: string };
  let release!: () => void;
  agent.expect({ tokens: ['before ', 'after'], holdAfter: 1, release: new Promise<void>((resolve) => (release = resolve)) });
  const sent = await fetch(`${base}/conversations/${id}/messages`, {
    method: 'POST',
    headers: { 'x-gateway-claims': claimsOf('ana'), 'content-type': 'application/json' },
    body: JSON.stringify({ content: 'finish me' }),
  });
  const body = sent.text();
  for (let i = 0; i < 300 && agent.calls.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  child.kill('SIGTERM');
  const exited = once(child, 'exit') as Promise<[number | null]>;
  // Shutdown has begun once new connections are refused; only then does the agent finish.
  let refusing = false;
  for (let i = 0; i < 300 && !refusing; i++) {
    refusing = await fetch(`${base}/health`).then(() => false, () => true);
    if (!refusing) await new Promise((resolve) => setTimeout(resolve, 10));
  }
  t.ok(refusing, 'the server stopped taking new requests');
  release();
  t.match(await body, /"type":"done"/, 'the browser still got its answer');
  const [code] = await exited;
  t.equal(code, 0);
  const stored = await db.collection('conversations').findOne({});
  t.same((stored?.messages as Array<{ content: string }>).map((m) => m.content), ['finish me', 'before after']);
});

t.test('npm run chat with a bad environment exits 2 naming every problem', async (t) => {
  const child = spawn(process.execPath, ['--import', 'tsx', 'cloud/chat/main.ts'], {
    env: { ...process.env, PORT: 'x', MONGO_URI: '', AGENT_URL: 'nope' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const [code] = (await once(child, 'exit')) as [number | null];
  t.equal(code, 2);
  t.match(stderr, /PORT: expected an integer/);
  t.match(stderr, /MONGO_URI: required but not set/);
  t.match(stderr, /AGENT_URL: not a http:\/\//);
});
