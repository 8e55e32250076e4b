/**
 * An agent that answers, but not in well-formed HTTP, is a broken agent and not an unreachable one:
 * before the stream a 502 that says so (`bad_response`), and mid-stream broken chunk framing is
 * `agent_malformed`, not `agent_interrupted`. The agent is a raw TCP fake on loopback; the store is the
 * stack's FerretDB.
 */
import t, { type Test } from 'tap';
import { RawAgent } from './support/raw-agent.js';
import { answerOf, createConversation, getConversation, metricValue, send, startChat, terminalOf, type ChatUnderTest } from './support/harness.js';

const CHUNKED_SSE_HEAD = 'HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n';

/** One chunk of a chunked body, framed correctly. */
const chunkOf = (text: string) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;

async function nothingStored(t: Test, chat: ChatUnderTest, id: string): Promise<void> {
  const stored = await getConversation(chat.url, 'ana', id);
  t.equal(stored.messages?.length, 0, 'nothing of the exchange is stored');
  t.equal(stored.title, 'New chat', 'not even the title');
}

t.test('a response that is not well-formed HTTP: 502 bad_response, not unreachable, before any stream bytes', async (t) => {
  const agent = await new RawAgent().start(t);
  const chat = await startChat(t, { agentUrl: agent.url });
  const conversation = await createConversation(chat.url, 'ana');
  agent.expect(['HTTX/1.1 200 OK\r\n\r\n'], ['HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 3\r\ncontent-length: 4\r\n\r\n']);
  for (const response of ['a bad status line', 'conflicting content lengths']) {
    const result = await send(chat.url, 'ana', conversation.id, 'anyone there?');
    t.equal(result.status, 502, response);
    t.match(result.headers.get('content-type'), /^application\/json/);
    t.same(result.body, { type: 'Bad Gateway', message: 'agent answered with a malformed HTTP response' }, response);
    t.same(result.frames, [], 'no stream bytes');
  }
  t.equal(await metricValue(chat.registry, 'chat_agent_errors_total', { reason: 'bad_response' }), 2);
  t.equal(await metricValue(chat.registry, 'chat_agent_errors_total', { reason: 'unreachable' }), 0);
  t.equal(await metricValue(chat.registry, 'chat_streams_started_total'), 0);
  await nothingStored(t, chat, conversation.id);
});

t.test('broken chunk framing in the middle of an answer: the error frame is agent_malformed, nothing stored', async (t) => {
  const agent = await new RawAgent().start(t);
  const chat = await startChat(t, { agentUrl: agent.url });
  const conversation = await createConversation(chat.url, 'ana');
  agent.expect([CHUNKED_SSE_HEAD, chunkOf('data: {"type":"token","text":"Hel"}\n\n'), 'zz\r\nlo\r\n']);
  const result = await send(chat.url, 'ana', conversation.id, 'q');
  t.equal(result.status, 200);
  t.equal(answerOf(result), 'Hel', 'the tokens before the break are relayed');
  t.same(terminalOf(result), { type: 'error', error: 'agent_malformed', message: 'agent broke the HTTP framing in the middle of the answer' });
  t.equal(await metricValue(chat.registry, 'chat_streams_failed_total', { reason: 'agent_malformed' }), 1);
  t.equal(await metricValue(chat.registry, 'chat_streams_failed_total', { reason: 'agent_interrupted' }), 0);
  t.equal(await metricValue(chat.registry, 'chat_agent_errors_total', { reason: 'stream_broken' }), 1);
  await nothingStored(t, chat, conversation.id);
});
