/**
 * A stopping service answers every request it took before the stop, not only the answers it streams.
 * It used to wait for the sends alone and then close every connection: a list, a create, a rename or a
 * delete still waiting for the database, or any request whose body was still arriving, had its
 * connection reset under it while its work (a created conversation, a rename) still landed.
 *
 * Nothing here races a timer of the test's. A request is known to be in the service's hands when Node
 * answered its `Expect: 100-continue` (it does so just before it hands the request over), or when its
 * write waits in PostgreSQL for a row the test holds; the stop is known to have begun when the server
 * refuses new connections. Only then is the rest of the body sent, or the row let go.
 */
import t from 'tap';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { request, type IncomingHttpHeaders } from 'node:http';
import { chatWithConversation, startChatProcess } from './support/chat-process.js';
import { startFakeAgent } from './support/fake-agent.js';
import { holdConversationRows } from './support/ferret-backend.js';
import { claimsOf, conversationsOf } from './support/harness.js';
import { freshChatDatabase } from './support/mongo.js';

type Answer = { status: number | undefined; headers: IncomingHttpHeaders; text: string } | { failed: string };

interface Upload {
  /** Sends the rest of the body. */
  finish(): void;
  /** The whole answer, or how the connection ended without one. */
  answer: Promise<Answer>;
}

/**
 * A request on a connection of its own whose headers the service has taken and of whose body only the
 * first half was sent.
 */
async function startUpload(url: string, method: string, headers: Record<string, string>, body: string): Promise<Upload> {
  const bytes = Buffer.from(body);
  const half = Math.floor(bytes.length / 2);
  const req = request(url, { method, agent: false, headers: { ...headers, expect: '100-continue', 'content-length': String(bytes.length) } });
  const answer = new Promise<Answer>((resolve) => {
    req.on('error', (err) => resolve({ failed: err.message }));
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text }));
      res.on('error', (err) => resolve({ failed: `the answer was cut: ${err.message}` }));
      res.on('close', () => resolve({ failed: 'the connection closed before the answer ended' }));
    });
  });
  req.flushHeaders();
  await once(req, 'continue');
  req.write(bytes.subarray(0, half));
  return { finish: () => req.end(bytes.subarray(half)), answer };
}

/** SIGTERM, then waits until the server refuses new connections: the stop has begun. `exited` is the exit code. */
async function stopping(child: ChildProcess, base: string): Promise<{ exited: Promise<[number | null]> }> {
  const exited = once(child, 'exit') as Promise<[number | null]>;
  child.kill('SIGTERM');
  let refusing = false;
  for (let i = 0; i < 500 && !refusing; i++) {
    refusing = await fetch(`${base}/health`).then(() => false, () => true);
    if (!refusing) await new Promise((resolve) => setTimeout(resolve, 10));
  }
  if (!refusing) throw new Error('the service kept taking connections after SIGTERM');
  return { exited };
}

/** The `data:` frames of an event-stream body. */
const framesOf = (text: string): unknown[] =>
  text
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => JSON.parse(line.slice('data: '.length)) as unknown);

t.test('SIGTERM while a create is still uploading its body: it is answered 201 with its conversation, stored once, exit 0', async (t) => {
  const agent = await startFakeAgent(t);
  const { uri, db } = await freshChatDatabase(t);
  const { child, base } = await startChatProcess(t, { MONGO_URI: uri, AGENT_URL: agent.url });
  const upload = await startUpload(
    `${base}/chat/conversations`,
    'POST',
    { 'x-gateway-claims': claimsOf('ana'), 'content-type': 'application/json' },
    JSON.stringify({ title: 'kept through the stop' }),
  );

  const { exited } = await stopping(child, base);
  upload.finish();
  const answer = await upload.answer;

  if ('failed' in answer) {
    t.fail(`the create got no answer: ${answer.failed}`);
  } else {
    t.equal(answer.status, 201, 'the create is answered');
    t.match(answer.headers['content-type'], /^application\/json/);
    t.match(JSON.parse(answer.text), { title: 'kept through the stop', messages: [] }, 'with the conversation it created');
  }
  const [code] = await exited;
  t.equal(code, 0, 'the stop still completed within its deadline');
  t.same(
    (await conversationsOf(db).find({}).toArray()).map((c) => c.title),
    ['kept through the stop'],
    'the conversation is stored once',
  );
});

t.test('SIGTERM while a send is still uploading its body: its answer streams to done and is stored, exit 0', async (t) => {
  const agent = await startFakeAgent(t);
  const { uri, db } = await freshChatDatabase(t);
  const { child, base, id } = await chatWithConversation(t, uri, agent.url);
  agent.expect({ tokens: ['answered ', 'anyway'] });
  const upload = await startUpload(
    `${base}/conversations/${id}/messages`,
    'POST',
    { 'x-gateway-claims': claimsOf('ana'), 'content-type': 'application/json', accept: 'text/event-stream' },
    JSON.stringify({ content: 'a question typed slowly' }),
  );

  const { exited } = await stopping(child, base);
  upload.finish();
  const answer = await upload.answer;

  if ('failed' in answer) {
    t.fail(`the send got no answer: ${answer.failed}`);
  } else {
    t.equal(answer.status, 200);
    t.match(framesOf(answer.text).at(-1), { type: 'done', message: { role: 'assistant', content: 'answered anyway' } }, 'the stream ends with done');
  }
  const [code] = await exited;
  t.equal(code, 0, 'the stop still completed within its deadline');
  const stored = await conversationsOf(db).findOne({});
  t.same(
    (stored?.messages as Array<{ content: string }> | undefined)?.map((m) => m.content),
    ['a question typed slowly', 'answered anyway'],
    'the exchange is stored',
  );
});

t.test('SIGTERM while a rename waits for the database: it is answered 200 once its write lands, exit 0', async (t) => {
  const agent = await startFakeAgent(t);
  const { uri, db } = await freshChatDatabase(t);
  const { child, base, id } = await chatWithConversation(t, uri, agent.url);
  // The rename's update waits behind this hold until it is released.
  const rows = await holdConversationRows(t, db);
  const renaming = fetch(`${base}/conversations/${id}`, {
    method: 'PATCH',
    headers: { 'x-gateway-claims': claimsOf('ana'), 'content-type': 'application/json' },
    body: JSON.stringify({ title: 'renamed during the stop' }),
  }).then(
    async (response): Promise<Answer> => ({ status: response.status, headers: {}, text: await response.text() }),
    (err: Error): Answer => ({ failed: `${err.message}: ${String(err.cause)}` }),
  );
  await rows.untilWriteWaits();

  const { exited } = await stopping(child, base);
  await rows.release();
  const answer = await renaming;

  if ('failed' in answer) {
    t.fail(`the rename got no answer: ${answer.failed}`);
  } else {
    t.equal(answer.status, 200, 'the rename is answered');
    t.match(JSON.parse(answer.text), { id, title: 'renamed during the stop' });
  }
  const [code] = await exited;
  t.equal(code, 0, 'the stop still completed within its deadline');
  t.equal((await conversationsOf(db).findOne({}))?.title, 'renamed during the stop');
});
