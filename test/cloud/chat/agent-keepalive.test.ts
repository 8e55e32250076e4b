import t from 'tap';
import { answerOf, createConversation, getConversation, metricValue, openSend, OpenStream, startChat, terminalOf, type ChatUnderTest } from './support/harness.js';

// An agent that keeps its answer open with keep-alive data but never answers would otherwise hold the
// browser's stream, the agent connection and the send open for good: the idle timeout counts the
// answer's silence, not the connection's.
const STALLED = { type: 'error', error: 'agent_timeout', message: 'agent stopped sending in the middle of the answer' };

/** Sends and waits for the terminal frame; the bound is only a safety net (the idle timeouts here are under 1 s). */
async function sendUntilTerminal(chat: ChatUnderTest, id: string): Promise<OpenStream> {
  const stream = await openSend(chat.url, 'ana', id, { content: 'q' });
  if (!(stream instanceof OpenStream)) throw new Error(`expected a stream, got ${stream.status}`);
  try {
    await stream.until(() => stream.frames.some((f) => f.frame.type !== 'token'), 15_000);
  } finally {
    stream.abort();
  }
  return stream;
}

t.test('an agent sending only keep-alive comments after a token: an error frame after the idle timeout, nothing stored', async (t) => {
  const chat = await startChat(t, { idleTimeoutMs: 500 });
  const conversation = await createConversation(chat.url, 'ana');
  chat.agent.expect({ tokens: ['thinking', ' forever'], keepAliveAfter: 1, keepAliveEveryMs: 50 });
  const result = await sendUntilTerminal(chat, conversation.id);
  t.equal(answerOf(result), 'thinking');
  t.same(terminalOf(result), STALLED);
  t.equal(await metricValue(chat.registry, 'chat_streams_failed_total', { reason: 'agent_timeout' }), 1);
  const stored = await getConversation(chat.url, 'ana', conversation.id);
  t.same(stored.messages, [], 'nothing stored');
  t.equal(stored.title, 'New chat');
});

t.test('an agent sending keep-alives before any token, empty tokens, or events of unknown types: the same timeout', async (t) => {
  const chat = await startChat(t, { idleTimeoutMs: 500 });
  const conversation = await createConversation(chat.url, 'ana');
  chat.agent.expect(
    { tokens: ['never'], keepAliveAfter: 0, keepAliveEveryMs: 50 },
    { tokens: ['never'], keepAliveAfter: 0, keepAliveEveryMs: 50, keepAlive: 'data: {"type":"token","text":""}\n\n' },
    { tokens: ['never'], keepAliveAfter: 0, keepAliveEveryMs: 50, keepAlive: 'data: {"type":"progress","step":"retrieval"}\n\n' },
  );
  for (const kind of ['comments', 'empty tokens', 'unknown events']) {
    const result = await sendUntilTerminal(chat, conversation.id);
    t.same(terminalOf(result), STALLED, kind);
  }
  t.same((await getConversation(chat.url, 'ana', conversation.id)).messages, [], 'nothing stored');
});

// An answer paced by the test: each token leaves the agent once the browser has the one before, and a
// gap later. The gaps add up to more than the idle timeout, so the idle check fires in the middle of the
// answer and must find it moving; each is a twentieth of the timeout, so only a stall of nearly the
// whole timeout between two tokens (not a slow machine) could cut it.
const PACED_IDLE_MS = 5_000;
const PACED_GAP_MS = 250;
const PACED_TOKENS = PACED_IDLE_MS / PACED_GAP_MS + 2;

t.test('an answer whose tokens keep coming is not cut, though it runs longer than the idle timeout in all', async (t) => {
  const chat = await startChat(t, { idleTimeoutMs: PACED_IDLE_MS });
  const conversation = await createConversation(chat.url, 'ana');
  const tokens = Array.from({ length: PACED_TOKENS }, (_, i) => `t${i} `);
  let opened!: (stream: OpenStream) => void;
  const streamOpened = new Promise<OpenStream>((resolve) => (opened = resolve));
  chat.agent.expect({
    tokens,
    beforeToken: async (index) => {
      const stream = await streamOpened;
      await stream.until(() => stream.frames.filter((f) => f.frame.type === 'token').length === index);
      await new Promise((resolve) => setTimeout(resolve, PACED_GAP_MS));
    },
  });
  const stream = await openSend(chat.url, 'ana', conversation.id, { content: 'q' });
  if (!(stream instanceof OpenStream)) throw new Error(`expected a stream, got ${stream.status}`);
  opened(stream);
  await stream.ended;
  t.equal(answerOf(stream), tokens.join(''));
  t.match(terminalOf(stream), { type: 'done', message: { content: tokens.join('') } });
});
