import t from 'tap';
import { createConversation, getConversation, metricValue, openSend, OpenStream, startChat, until, type ChatUnderTest } from './support/harness.js';

const disconnectsSeen = (chat: ChatUnderTest, n: number) => async () => (await metricValue(chat.registry, 'chat_client_disconnects_total')) >= n;

t.test('the browser leaves mid-stream: the answer is read to the end and stored, and counted', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  let release!: () => void;
  const citations = [{ chunk_id: 'k', document_id: 'd', source: 's', section_path: ['a', 'b'] }];
  chat.agent.expect({ tokens: ['Seen ', 'by ', 'nobody'], holdAfter: 1, release: new Promise<void>((resolve) => (release = resolve)), citations });

  const stream = await openSend(chat.url, 'ana', conversation.id, { content: 'Will you remember?' });
  if (!(stream instanceof OpenStream)) throw new Error(`expected a stream, got ${stream.status}`);
  await stream.until(() => stream.frames.length === 1);
  stream.abort();
  await until(disconnectsSeen(chat, 1), 'the service noticed the browser left');
  release();

  await until(async () => (await getConversation(chat.url, 'ana', conversation.id)).messages?.length === 2, 'the exchange is stored');
  const stored = await getConversation(chat.url, 'ana', conversation.id);
  t.same(stored.messages?.map((m) => [m.role, m.content]), [
    ['user', 'Will you remember?'],
    ['assistant', 'Seen by nobody'],
  ], 'reopening the conversation shows the whole answer');
  t.same(stored.messages?.[1]?.citations, citations);
  t.equal(stored.title, 'Will you remember?');
  await until(async () => (await metricValue(chat.registry, 'chat_streams_completed_after_disconnect_total')) === 1, 'counted');
  t.equal(await metricValue(chat.registry, 'chat_streams_completed_total'), 1);
  t.equal(await metricValue(chat.registry, 'chat_active_streams'), 0);
});

t.test('the browser leaves before the agent has even answered: stored all the same', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  const controller = new AbortController();
  let release!: () => void;
  chat.agent.expect({ tokens: ['late'], holdHeaders: true, release: new Promise<void>((resolve) => (release = resolve)) });
  const pending = fetch(`${chat.url}/conversations/${conversation.id}/messages`, {
    method: 'POST',
    headers: { 'x-gateway-claims': (await import('./support/harness.js')).claimsOf('ana'), 'content-type': 'application/json' },
    body: JSON.stringify({ content: 'quick question' }),
    signal: controller.signal,
  }).catch(() => 'aborted');
  await chat.agent.called(1);
  controller.abort();
  t.equal(await pending, 'aborted');
  await until(disconnectsSeen(chat, 1), 'the service noticed the browser left');
  release();
  await until(async () => (await getConversation(chat.url, 'ana', conversation.id)).messages?.length === 2, 'the exchange is stored');
  await until(async () => (await metricValue(chat.registry, 'chat_streams_completed_after_disconnect_total')) === 1, 'counted');
});

t.test('the browser leaves and then the agent fails: nothing is stored, the failure is counted', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  let release!: () => void;
  chat.agent.expect({ tokens: ['doomed ', 'answer'], holdAfter: 1, release: new Promise<void>((resolve) => (release = resolve)), failAfter: 2 });
  const stream = await openSend(chat.url, 'ana', conversation.id, { content: 'q' });
  if (!(stream instanceof OpenStream)) throw new Error('expected a stream');
  await stream.until(() => stream.frames.length === 1);
  stream.abort();
  await until(disconnectsSeen(chat, 1), 'the service noticed the browser left');
  release();
  await until(async () => (await metricValue(chat.registry, 'chat_streams_failed_total', { reason: 'agent_error' })) === 1, 'the failure is counted');
  t.equal((await getConversation(chat.url, 'ana', conversation.id)).messages?.length, 0);
  t.equal(await metricValue(chat.registry, 'chat_streams_completed_after_disconnect_total'), 0);
});
