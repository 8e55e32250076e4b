import t from 'tap';
import { once } from 'node:events';
import { Client } from 'undici';
import { LEASE_COLLECTION, type LeaseDocument } from '../../../cloud/chat/conversation-lock.js';
import { chatWithConversation } from './support/chat-process.js';
import { startFakeAgent } from './support/fake-agent.js';
import { claimsOf, conversationsOf, openSend, OpenStream, terminalOf } from './support/harness.js';
import { freshChatDatabase } from './support/mongo.js';

t.test('SIGTERM while an answer waits for a conversation another replica holds: an error frame, nothing stored, exit 0', async (t) => {
  const agent = await startFakeAgent(t);
  const { uri, db } = await freshChatDatabase(t);
  const { child, base, id } = await chatWithConversation(t, uri, agent.url);
  // Another replica holds the conversation's lease for a minute: the append waits (up to 15 s).
  await db.collection<LeaseDocument>(LEASE_COLLECTION).insertOne({
    _id: 'another-replica',
    conversation: id,
    expires_at: new Date(Date.now() + 60_000),
  });
  agent.expect({ tokens: ['never ', 'stored'] });
  const stream = await openSend(base, 'ana', id, { content: 'store me' });
  if (!(stream instanceof OpenStream)) throw new Error(`expected a stream, got ${stream.status} ${JSON.stringify(stream.body)}`);
  await stream.until(() => stream.frames.length === 2);
  const exited = once(child, 'exit') as Promise<[number | null]>;
  child.kill('SIGTERM');
  await stream.ended;
  t.same(
    terminalOf(stream),
    { type: 'error', error: 'store_failed', message: 'the service is stopping and the answer was not stored; please send the question again' },
    'the stream ends with an error frame, not a cut connection',
  );
  t.same(stream.frames.map((f) => f.id), ['1', '2', '3']);
  const [code] = await exited;
  t.equal(code, 0, 'the waiting append did not hold the process past its stop deadline');
  const stored = await conversationsOf(db).findOne({});
  t.same(stored?.messages, [], 'nothing of the exchange is stored');
});

t.test('after SIGTERM a new request on a kept-alive connection is refused with 503 and connection: close; streams in progress finish', async (t) => {
  const agent = await startFakeAgent(t);
  const { uri, db } = await freshChatDatabase(t);
  const { child, base, id } = await chatWithConversation(t, uri, agent.url);
  let releaseFirst!: () => void;
  let releaseSecond!: () => void;
  agent.expect(
    { tokens: ['first ', 'answer'], holdAfter: 1, release: new Promise<void>((resolve) => (releaseFirst = resolve)) },
    { tokens: ['second ', 'answer'], holdAfter: 1, release: new Promise<void>((resolve) => (releaseSecond = resolve)) },
  );
  // The first answer streams on a connection of its own, kept alive for a next request.
  const connection = new Client(base);
  t.teardown(() => connection.destroy());
  const sendHeaders = { 'x-gateway-claims': claimsOf('ana'), 'content-type': 'application/json', accept: 'text/event-stream' };
  const first = await connection.request({ path: `/conversations/${id}/messages`, method: 'POST', headers: sendHeaders, body: JSON.stringify({ content: 'one' }) });
  t.equal(first.statusCode, 200);
  let firstText = '';
  first.body.setEncoding('utf8');
  first.body.on('data', (chunk: string) => (firstText += chunk));
  const firstEnded = once(first.body, 'end');
  await agent.called(1);
  // The second keeps the service draining while the first connection is reused.
  const second = await openSend(base, 'ana', id, { content: 'two' });
  if (!(second instanceof OpenStream)) throw new Error(`expected a stream, got ${second.status} ${JSON.stringify(second.body)}`);
  await second.until(() => second.frames.length === 1);

  const exited = once(child, 'exit') as Promise<[number | null]>;
  child.kill('SIGTERM');
  let refusing = false;
  for (let i = 0; i < 300 && !refusing; i++) {
    refusing = await fetch(`${base}/health`).then(() => false, () => true);
    if (!refusing) await new Promise((resolve) => setTimeout(resolve, 10));
  }
  t.ok(refusing, 'the server stopped taking new connections');
  releaseFirst();
  await firstEnded;
  t.match(firstText, /"type":"done"/, 'the stream in progress finished with done');

  const next = await connection.request({ path: `/conversations/${id}`, method: 'GET', headers: { 'x-gateway-claims': claimsOf('ana') } });
  const nextBody = await next.body.text();
  t.equal(next.statusCode, 503, `a request after the stop began is refused (${nextBody})`);
  t.equal(next.headers.connection, 'close');
  t.same(JSON.parse(nextBody), { type: 'Service Unavailable', message: 'the service is stopping; send the request again' });

  releaseSecond();
  await second.ended;
  t.match(terminalOf(second), { type: 'done', message: { content: 'second answer' } }, 'the other stream in progress finished too');
  const [code] = await exited;
  t.equal(code, 0);
  const stored = await conversationsOf(db).findOne({});
  t.same((stored?.messages as Array<{ content: string }>).map((m) => m.content).sort(), ['first answer', 'one', 'second answer', 'two']);
});

t.test('SIGTERM while a send waits for the agent to answer: at the drain limit the browser is told the service is stopping, not 502, exit 0', async (t) => {
  const agent = await startFakeAgent(t);
  const { uri, db } = await freshChatDatabase(t);
  const { child, base, id } = await chatWithConversation(t, uri, agent.url);
  agent.expect({ neverAnswer: true });
  const sending = openSend(base, 'ana', id, { content: 'anyone there?' });
  await agent.called(1);
  const exited = once(child, 'exit') as Promise<[number | null]>;
  child.kill('SIGTERM');
  const answer = await sending;
  if (answer instanceof OpenStream) throw new Error('expected a JSON answer, got a stream');
  t.same([answer.status, answer.body], [503, { type: 'Service Unavailable', message: 'the service is stopping; send the request again' }]);
  const [code] = await exited;
  t.equal(code, 0);
  const stored = await conversationsOf(db).findOne({});
  t.same(stored?.messages, [], 'nothing of the exchange is stored');
});
