import t from 'tap';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { ConfigError } from '../../../shared/env.js';
import { listen } from '../../../shared/lifecycle.js';
import { readChatConfig } from '../../../cloud/chat/config.js';
import { chatWithConversation, startChatProcess } from './support/chat-process.js';
import { REFUSING_PORT, startFakeAgent } from './support/fake-agent.js';
import { claimsOf, conversationsOf, getConversation, openSend, OpenStream, send, terminalOf, type Frame } from './support/harness.js';
import { freshChatDatabase } from './support/mongo.js';

const CITATIONS = [{ chunk_id: 'c-7', document_id: 'doc-2', source: 'manuals/boiler.pdf', section_path: ['Start-up'] }];

/** The `done` frame ending a stream; fails the test with what came instead. */
function doneOf(frame: Frame | undefined): Extract<Frame, { type: 'done' }> {
  if (frame?.type !== 'done') throw new Error(`expected a done frame, got ${JSON.stringify(frame)}`);
  return frame;
}

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

t.test('npm run chat: serves with its env, answers a send end to end, stops cleanly on SIGTERM', async (t) => {
  const agent = await startFakeAgent(t);
  const { uri } = await freshChatDatabase(t);
  const { child, base, up, output } = await startChatProcess(t, { MONGO_URI: uri, AGENT_URL: agent.url, HISTORY_MAX_MESSAGES: '4' });
  t.ok(up, `the service came up (${output()})`);

  const created = await fetch(`${base}/chat/conversations`, { method: 'POST', headers: { 'x-gateway-claims': claimsOf('ana') } });
  const { id } = (await created.json()) as { id: string };
  agent.expect({ tokens: ['Hel', 'lo'], citations: CITATIONS });
  const sent = await send(base, 'ana', id, 'hi', '/chat');
  t.equal(sent.status, 200);
  t.match(sent.headers.get('content-type'), /^text\/event-stream/);
  t.same(sent.frames.map((f) => f.id), ['1', '2', '3'], 'increasing ids');
  t.same(
    sent.frames.slice(0, 2).map((f) => f.frame),
    [
      { type: 'token', text: 'Hel' },
      { type: 'token', text: 'lo' },
    ],
  );
  const done = doneOf(terminalOf(sent));
  t.match(done.message, { id: /^[0-9a-f]{24}$/, role: 'assistant', content: 'Hello' });
  t.same(done.message.citations, CITATIONS, 'citations as the agent gave them');
  t.equal(new Date(done.message.createdAt).toISOString(), done.message.createdAt);
  t.same((await getConversation(base, 'ana', id)).messages?.[1], done.message, 'done carries the stored message');

  child.kill('SIGTERM');
  const [code] = (await once(child, 'exit')) as [number | null];
  t.equal(code, 0, 'exit 0 after SIGTERM');
});

t.test('SIGTERM while an answer streams: the answer finishes, is stored, then the process exits 0', async (t) => {
  const agent = await startFakeAgent(t);
  const { uri, db } = await freshChatDatabase(t);
  const { child, base, id } = await chatWithConversation(t, uri, agent.url);
  let release!: () => void;
  agent.expect({ tokens: ['before ', 'after'], holdAfter: 1, release: new Promise<void>((resolve) => (release = resolve)) });
  const stream = await openSend(base, 'ana', id, { content: 'finish me' });
  if (!(stream instanceof OpenStream)) throw new Error(`expected a stream, got ${stream.status} ${JSON.stringify(stream.body)}`);
  await stream.until(() => stream.frames.length === 1);
  t.same(stream.frames[0], { id: '1', frame: { type: 'token', text: 'before ' } }, 'the answer is streaming');
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
  await stream.ended;
  t.same(stream.frames[1], { id: '2', frame: { type: 'token', text: 'after' } }, 'the rest of the answer after SIGTERM');
  t.equal(stream.frames.length, 3);
  const done = doneOf(terminalOf(stream));
  t.equal(stream.frames[2]?.id, '3');
  t.match(done.message, { id: /^[0-9a-f]{24}$/, role: 'assistant', content: 'before after' }, 'the browser still got its answer');
  t.notOk('citations' in done.message, 'no citations when the agent gave none');
  const [code] = await exited;
  t.equal(code, 0);
  const stored = await conversationsOf(db).findOne({});
  const messages = stored?.messages as Array<{ id: string; content: string }>;
  t.same(messages.map((m) => m.content), ['finish me', 'before after']);
  t.equal(messages[1]?.id, done.message.id, 'done carries the stored message');
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

t.test('SIGTERM while the agent stalls: at the drain limit the browser gets an error frame, nothing is stored, exit 0', async (t) => {
  const agent = await startFakeAgent(t);
  const { uri, db } = await freshChatDatabase(t);
  const { child, base, id } = await chatWithConversation(t, uri, agent.url);
  agent.expect({ tokens: ['never ', 'finished'], holdAfter: 1 });
  const stream = await openSend(base, 'ana', id, { content: 'will you finish?' });
  if (!(stream instanceof OpenStream)) throw new Error(`expected a stream, got ${stream.status} ${JSON.stringify(stream.body)}`);
  await stream.until(() => stream.frames.length === 1);
  const exited = once(child, 'exit') as Promise<[number | null]>;
  child.kill('SIGTERM');
  await stream.ended;
  t.same(terminalOf(stream), { type: 'error', error: 'agent_interrupted', message: 'agent connection broke in the middle of the answer' }, 'the stream ends with an error frame, not a cut connection');
  t.same(stream.frames.map((f) => f.id), ['1', '2']);
  const [code] = await exited;
  t.equal(code, 0);
  const stored = await conversationsOf(db).findOne({});
  t.same(stored?.messages, [], 'nothing of the exchange is stored');
});

t.test('npm run chat with MongoDB unreachable, or its port taken: one log line naming the cause, exit 1, no stack trace', async (t) => {
  const unreachable = await startChatProcess(t, { MONGO_URI: `mongodb://chat:hunter2@127.0.0.1:${REFUSING_PORT}/chat`, LOG_LEVEL: 'info' });
  // startChatProcess returns once the process has exited, so its exit code is already known.
  const code = unreachable.child.exitCode ?? ((await once(unreachable.child, 'exit')) as [number | null])[0];
  t.equal(code, 1);
  t.notMatch(unreachable.output(), /\n\s+at /, 'no stack trace');
  t.notMatch(unreachable.output(), /hunter2/, 'the password is not printed');
  const line = unreachable.output().split('\n').find((l) => l.includes('chat failed to start'));
  t.ok(line, `a start failure line: ${unreachable.output()}`);
  t.match(JSON.parse(line ?? '{}'), { level: 60, error: /^MongoServerSelectionError/ }, 'it names MongoDB');

  const { uri } = await freshChatDatabase(t);
  const taken = createServer();
  const takenPort = await listen(taken, 0);
  t.teardown(() => new Promise<void>((resolve) => taken.close(() => resolve())));
  const busy = spawn(process.execPath, ['--import', 'tsx', 'cloud/chat/main.ts'], {
    env: { ...process.env, PORT: String(takenPort), LOG_LEVEL: 'info', MONGO_URI: uri },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  busy.stdout.on('data', (chunk) => (output += chunk));
  busy.stderr.on('data', (chunk) => (output += chunk));
  const [busyCode] = (await once(busy, 'exit')) as [number | null];
  t.equal(busyCode, 1);
  t.notMatch(output, /\n\s+at /, 'no stack trace');
  t.match(output, /"error":"Error \(EADDRINUSE\)".*"port":\d+.*"msg":"chat failed to start"/);
});
