import t from 'tap';
import { createConversation, fillConversation, getConversation, metricValue, send, startChat, terminalOf } from './support/harness.js';

t.test('98 messages: one more send fits and makes exactly 100', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  await fillConversation(chat.db, conversation.id, 98);
  chat.agent.expect({ tokens: ['the last answer'] });
  const result = await send(chat.url, 'ana', conversation.id, 'the last question');
  t.equal(terminalOf(result)?.type, 'done');
  const stored = await getConversation(chat.url, 'ana', conversation.id);
  t.equal(stored.messages?.length, 100);
  t.same(stored.messages?.slice(-2).map((m) => m.content), ['the last question', 'the last answer']);

  const after = await send(chat.url, 'ana', conversation.id, 'one too many');
  t.equal(after.status, 409, 'and then it is full');
});

for (const count of [99, 100]) {
  t.test(`${count} messages: 409 Conflict before the agent is called, nothing stored`, async (t) => {
    const chat = await startChat(t);
    const conversation = await createConversation(chat.url, 'ana');
    await fillConversation(chat.db, conversation.id, count);
    const result = await send(chat.url, 'ana', conversation.id, 'is there room?');
    t.equal(result.status, 409);
    t.same(result.body, {
      type: 'Conflict',
      message: `conversation is full: it holds ${count} of 100 messages and a send adds 2`,
    });
    t.equal(chat.agent.calls.length, 0);
    t.equal((await getConversation(chat.url, 'ana', conversation.id)).messages?.length, count);
    t.equal(await metricValue(chat.registry, 'chat_sends_rejected_total', { reason: 'full' }), 1);
  });
}

t.test('a conversation that filled up while the answer streamed gets an error frame, and nothing is stored', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  await fillConversation(chat.db, conversation.id, 96);
  let release!: () => void;
  chat.agent.expect({ tokens: ['late', ' answer'], holdAfter: 1, release: new Promise<void>((resolve) => (release = resolve)) });
  const pending = send(chat.url, 'ana', conversation.id, 'slow question');
  await chat.agent.called(1);
  await fillConversation(chat.db, conversation.id, 99);
  release();
  const result = await pending;
  t.same(terminalOf(result), {
    type: 'error',
    error: 'conversation_full',
    message: 'the conversation reached 100 messages while the answer was streaming',
  });
  t.equal((await getConversation(chat.url, 'ana', conversation.id)).messages?.length, 99);
});
