import t, { type Test } from 'tap';
import { createConversation, fillConversation, getConversation, send, startChat, terminalOf, type SendResult } from './support/harness.js';

const SENDS = 20;

function checkEverySuccessStored(t: Test, results: SendResult[], messages: Array<{ id: string; role: string; content: string }>): number {
  let done = 0;
  for (const [i, result] of results.entries()) {
    const terminal = terminalOf(result);
    if (terminal?.type !== 'done') continue;
    done++;
    const answerAt = messages.findIndex((m) => m.id === terminal.message.id);
    t.ok(answerAt > 0, `send ${i}: its answer is stored`);
    t.equal(messages[answerAt]?.content, `answer ${i}`);
    t.same(messages[answerAt - 1] && { role: messages[answerAt - 1]?.role, content: messages[answerAt - 1]?.content }, { role: 'user', content: `question ${i}` }, `send ${i}: its question sits right before its answer`);
  }
  return done;
}

t.test(`${SENDS} sends at once into an empty conversation: every exchange is stored, none lost`, async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  // Every answer is held until all the agent calls are in, so the appends really race.
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  for (let i = 0; i < SENDS; i++) chat.agent.expect({ tokensFor: (q) => [q.replace('question', 'answer')], holdAfter: 0, release: gate });
  const pending = Array.from({ length: SENDS }, (_, i) => send(chat.url, 'ana', conversation.id, `question ${i}`));
  await chat.agent.called(SENDS);
  t.equal(chat.agent.calls.length, SENDS, 'all sends reached the agent');
  release();
  const results = await Promise.all(pending);

  const stored = await getConversation(chat.url, 'ana', conversation.id);
  const messages = stored.messages ?? [];
  const done = checkEverySuccessStored(t, results, messages);
  t.equal(done, SENDS, 'every send succeeded');
  t.equal(messages.length, SENDS * 2, 'exactly two messages per send');
  t.equal(new Set(messages.map((m) => m.id)).size, messages.length, 'no message twice');
  const listed = await (await fetch(`${chat.url}/conversations`, { headers: { 'x-gateway-claims': (await import('./support/harness.js')).claimsOf('ana') } })).json() as Array<{ messageCount: number }>;
  t.equal(listed[0]?.messageCount, SENDS * 2, 'the kept count agrees with the messages');
  t.same(chat.agent.unexpected, []);
});

t.test(`${SENDS} sends at once into a conversation with 90 messages: exactly 5 fit, the total is 100`, async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  await fillConversation(chat.db, conversation.id, 90);
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  for (let i = 0; i < SENDS; i++) chat.agent.expect({ tokensFor: (q) => [q.replace('question', 'answer')], holdAfter: 0, release: gate });
  const pending = Array.from({ length: SENDS }, (_, i) => send(chat.url, 'ana', conversation.id, `question ${i}`));
  await chat.agent.called(SENDS);
  release();
  const results = await Promise.all(pending);

  const messages = (await getConversation(chat.url, 'ana', conversation.id)).messages ?? [];
  t.equal(messages.length, 100, 'never more than 100');
  const done = checkEverySuccessStored(t, results, messages);
  t.equal(done, 5, 'five exchanges fit in the ten free places');
  const refused = results.filter((r) => {
    const terminal = terminalOf(r);
    return terminal?.type === 'error' && terminal.error === 'conversation_full';
  });
  t.equal(refused.length, SENDS - 5, 'the others end with a conversation_full error frame');
});

t.test('sends racing through two replicas that share the database lose nothing either', async (t) => {
  const first = await startChat(t);
  const second = await startChat(t, { db: first.db });
  const conversation = await createConversation(first.url, 'ana');
  await fillConversation(first.db, conversation.id, 80);
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const replicas = [first, second];
  for (let i = 0; i < SENDS; i++) replicas[i % 2]?.agent.expect({ tokensFor: (q) => [q.replace('question', 'answer')], holdAfter: 0, release: gate });
  const pending = Array.from({ length: SENDS }, (_, i) => send((replicas[i % 2] ?? first).url, 'ana', conversation.id, `question ${i}`));
  await Promise.all([first.agent.called(SENDS / 2), second.agent.called(SENDS / 2)]);
  release();
  const results = await Promise.all(pending);
  const messages = (await getConversation(first.url, 'ana', conversation.id)).messages ?? [];
  t.equal(messages.length, 100);
  t.equal(checkEverySuccessStored(t, results, messages), 10);
});
