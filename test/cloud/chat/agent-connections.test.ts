import t from 'tap';
import { answerOf, createConversation, openSend, OpenStream, send, startChat, terminalOf } from './support/harness.js';

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

t.test('an answer that ended with its final event leaves its agent connection for the next question', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  chat.agent.expect({ tokens: ['one'] }, { tokens: ['two'] }, { tokens: ['three'] });
  for (const expected of ['one', 'two', 'three']) {
    const result = await send(chat.url, 'ana', conversation.id, `say ${expected}`);
    t.equal(answerOf(result), expected);
    t.equal(terminalOf(result)?.type, 'done');
  }
  t.equal(chat.agent.connectionsUsed, 1, 'three questions in a row, one connection');
});

t.test('an agent that ends its response a moment after the final event: the connection is still reused', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  chat.agent.expect({ tokens: ['one'], endAfterFinalMs: 50 }, { tokens: ['two'], endAfterFinalMs: 50 }, { tokens: ['three'], endAfterFinalMs: 50 });
  for (const [i, expected] of ['one', 'two', 'three'].entries()) {
    const result = await send(chat.url, 'ana', conversation.id, `say ${expected}`);
    t.equal(answerOf(result), expected);
    t.equal(terminalOf(result)?.type, 'done', 'done is sent at the final event, without waiting for the end');
    // The next question goes once the agent has ended this answer, as it would on a pooled connection.
    await chat.agent.calls[i]?.finished;
  }
  t.equal(chat.agent.connectionsUsed, 1, 'three questions in a row, one connection');
});

t.test('an agent that closes idle connections quickly: the next question on a new connection still gets its answer', async (t) => {
  const chat = await startChat(t);
  chat.agent.closeIdleConnectionsAfter(200);
  const busy = await createConversation(chat.url, 'ana');
  const next = await createConversation(chat.url, 'ana');
  let release!: () => void;
  chat.agent.expect({ tokens: ['held ', 'open'], holdAfter: 1, release: new Promise<void>((resolve) => (release = resolve)) }, { tokens: ['fresh'] });
  const first = await openSend(chat.url, 'ana', busy.id, { content: 'keep the line busy' });
  if (!(first instanceof OpenStream)) throw new Error(`the first send answered ${first.status}`);
  await first.until(() => first.frames.length >= 1);
  // The first question's new connection came with a spare; the agent closes that spare once idle.
  for (let i = 0; i < 500 && chat.agent.idleClosed === 0; i++) await pause(10);
  t.ok(chat.agent.idleClosed >= 1, 'the agent closed an idle connection');
  // The only pooled connection is busy, so this question needs a new one: not the closed spare.
  const second = await send(chat.url, 'ana', next.id, 'and now?');
  t.equal(second.status, 200);
  t.equal(answerOf(second), 'fresh');
  t.equal(terminalOf(second)?.type, 'done');
  release();
  await first.ended;
  t.equal(answerOf({ ...second, frames: first.frames }), 'held open');
  t.equal(first.frames.at(-1)?.frame.type, 'done');
});
