import t from 'tap';
import { DEFAULT_HEARTBEAT_MS } from '../../../cloud/chat/sse.js';
import { createConversation, openSend, OpenStream, startChat } from './support/harness.js';

t.test('the heartbeat default is 15 seconds', async (t) => {
  t.equal(DEFAULT_HEARTBEAT_MS, 15_000);
});

t.test('a comment keeps a quiet stream alive while the agent thinks; frames keep increasing ids', async (t) => {
  const chat = await startChat(t, { heartbeatMs: 25 });
  const conversation = await createConversation(chat.url, 'ana');
  let release!: () => void;
  chat.agent.expect({ tokens: ['slow', ' thought'], holdAfter: 1, release: new Promise<void>((resolve) => (release = resolve)) });
  const stream = await openSend(chat.url, 'ana', conversation.id, { content: 'take your time' });
  if (!(stream instanceof OpenStream)) throw new Error('expected a stream');

  await stream.until(() => stream.comments.length >= 3);
  t.ok(stream.comments.every((c) => c.trim() === 'heartbeat'), 'heartbeats are SSE comments, not events');
  t.equal(stream.frames.length, 1, 'heartbeats add no frames');
  release();
  await stream.ended;
  t.same(stream.frames.map((f) => f.id), ['1', '2', '3']);
  t.same(stream.frames.map((f) => f.frame.type), ['token', 'token', 'done']);
});
