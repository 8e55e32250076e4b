import t from 'tap';
import { call, createConversation, send, startChat, terminalOf } from './support/harness.js';

t.test('a conversation deleted while its answer streams: an error frame, and it stays deleted', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  let release!: () => void;
  chat.agent.expect({ tokens: ['too ', 'late'], holdAfter: 1, release: new Promise<void>((resolve) => (release = resolve)) });
  const pending = send(chat.url, 'ana', conversation.id, 'q');
  for (let i = 0; i < 500 && chat.agent.calls.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  t.equal((await call(chat.url, 'DELETE', `/conversations/${conversation.id}`, 'ana')).status, 204);
  release();
  const result = await pending;
  t.same(terminalOf(result), { type: 'error', error: 'conversation_gone', message: 'the conversation was deleted while the answer was streaming' });
  t.equal((await call(chat.url, 'GET', `/conversations/${conversation.id}`, 'ana')).status, 404);
  t.equal(await chat.db.collection('conversations').countDocuments({}), 0, 'the append did not bring it back');
});
