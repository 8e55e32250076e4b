import t, { type Test } from 'tap';
import { REFUSING_URL } from './support/fake-agent.js';
import { unacceptingUrl } from './support/unaccepting-listener.js';
import { MongoClient } from 'mongodb';
import { freshChatDatabase } from './support/mongo.js';
import { answerOf, conversationsOf, createConversation, getConversation, histogramCount, metricValue, send, startChat, terminalOf, type ChatUnderTest } from './support/harness.js';

async function nothingStored(t: Test, chat: ChatUnderTest, id: string): Promise<void> {
  const stored = await getConversation(chat.url, 'ana', id);
  t.equal(stored.messages?.length, 0, 'nothing of the exchange is stored');
  t.equal(stored.title, 'New chat', 'not even the title');
}

t.test('an agent that refuses connections: 502 JSON, before any stream bytes', async (t) => {
  const chat = await startChat(t, { agentUrl: REFUSING_URL });
  const conversation = await createConversation(chat.url, 'ana');
  const result = await send(chat.url, 'ana', conversation.id, 'anyone there?');
  t.equal(result.status, 502);
  t.match(result.headers.get('content-type'), /^application\/json/);
  t.same(result.body, { type: 'Bad Gateway', message: 'agent is unreachable' });
  t.equal(await metricValue(chat.registry, 'chat_agent_errors_total', { reason: 'unreachable' }), 1);
  t.equal(await metricValue(chat.registry, 'chat_streams_started_total'), 0);
  t.equal(await histogramCount(chat.registry, 'chat_conversation_read_seconds'), 1);
  t.equal(await histogramCount(chat.registry, 'chat_agent_response_seconds'), 0, 'a call the agent never answered is not a response time');
  await nothingStored(t, chat, conversation.id);
});

t.test('an agent that accepts no connection in time: 502 JSON at the connect timeout, before any stream bytes', async (t) => {
  const chat = await startChat(t, { agentUrl: await unacceptingUrl(t), connectTimeoutMs: 200, responseTimeoutMs: 10_000 });
  const conversation = await createConversation(chat.url, 'ana');
  const result = await send(chat.url, 'ana', conversation.id, 'anyone there?');
  t.equal(result.status, 502);
  t.match(result.headers.get('content-type'), /^application\/json/);
  // The message is the connect timeout's own; the 10 s response timeout would say 'did not answer'.
  t.same(result.body, { type: 'Bad Gateway', message: 'agent did not accept the connection in time' });
  t.same(result.frames, [], 'no stream bytes');
  t.equal(await metricValue(chat.registry, 'chat_agent_errors_total', { reason: 'timeout' }), 1);
  t.equal(await metricValue(chat.registry, 'chat_agent_errors_total', { reason: 'unreachable' }), 0);
  t.equal(await metricValue(chat.registry, 'chat_streams_started_total'), 0);
  await nothingStored(t, chat, conversation.id);
});

t.test('an agent answering an error status or no event stream: 502', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  chat.agent.expect({ status: 503 }, { status: 401 }, { contentType: 'application/json', tokens: ['x'] });
  const unavailable = await send(chat.url, 'ana', conversation.id, 'q');
  t.same([unavailable.status, unavailable.body], [502, { type: 'Bad Gateway', message: 'agent answered 503' }]);
  const unauthorized = await send(chat.url, 'ana', conversation.id, 'q');
  t.same([unauthorized.status, unauthorized.body], [502, { type: 'Bad Gateway', message: 'agent answered 401' }]);
  const notStream = await send(chat.url, 'ana', conversation.id, 'q');
  t.same([notStream.status, notStream.body], [502, { type: 'Bad Gateway', message: 'agent did not answer with an event stream' }]);
  t.equal(await metricValue(chat.registry, 'chat_agent_errors_total', { reason: 'bad_status' }), 2);
  t.equal(await metricValue(chat.registry, 'chat_agent_errors_total', { reason: 'not_event_stream' }), 1);
  await nothingStored(t, chat, conversation.id);
});

t.test('an agent that never answers: 502 after the response timeout', async (t) => {
  const chat = await startChat(t, { responseTimeoutMs: 300 });
  const conversation = await createConversation(chat.url, 'ana');
  chat.agent.expect({ neverAnswer: true });
  const result = await send(chat.url, 'ana', conversation.id, 'hello?');
  t.same([result.status, result.body], [502, { type: 'Bad Gateway', message: 'agent did not answer in time' }]);
  t.equal(await metricValue(chat.registry, 'chat_agent_errors_total', { reason: 'timeout' }), 1);
});

t.test('an error event mid-stream: the tokens so far, then an error frame, and nothing stored', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  chat.agent.expect({ tokens: ['Partial ', 'answer ', 'never'], failAfter: 2 });
  const result = await send(chat.url, 'ana', conversation.id, 'q');
  t.equal(result.status, 200);
  t.equal(answerOf(result), 'Partial answer ');
  t.same(terminalOf(result), { type: 'error', error: 'agent_error', message: 'the agent could not answer this question' });
  t.equal(result.frames.length, 3);
  t.equal(result.frames[2]?.id, '3', 'the error frame carries the next id');
  t.equal(await metricValue(chat.registry, 'chat_streams_failed_total', { reason: 'agent_error' }), 1);
  t.equal(await metricValue(chat.registry, 'chat_agent_errors_total', { reason: 'stream_error' }), 1);
  await nothingStored(t, chat, conversation.id);
});

t.test('the agent connection dropping mid-stream: an error frame, nothing stored', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  chat.agent.expect({ tokens: ['one ', 'two ', 'three'], dropAfter: 2 });
  const result = await send(chat.url, 'ana', conversation.id, 'q');
  t.equal(answerOf(result), 'one two ');
  t.same(terminalOf(result), { type: 'error', error: 'agent_interrupted', message: 'agent connection broke in the middle of the answer' });
  t.equal(await metricValue(chat.registry, 'chat_agent_errors_total', { reason: 'stream_broken' }), 1, 'counted as an agent error (a stop is not: stop-during-answer)');
  await nothingStored(t, chat, conversation.id);
});

t.test('an agent that stalls mid-stream: an error frame after the idle timeout', async (t) => {
  const chat = await startChat(t, { idleTimeoutMs: 300 });
  const conversation = await createConversation(chat.url, 'ana');
  chat.agent.expect({ tokens: ['thinking', ' forever'], holdAfter: 1 });
  const result = await send(chat.url, 'ana', conversation.id, 'q');
  t.equal(answerOf(result), 'thinking');
  t.same(terminalOf(result), { type: 'error', error: 'agent_timeout', message: 'agent stopped sending in the middle of the answer' });
  t.equal(await metricValue(chat.registry, 'chat_streams_failed_total', { reason: 'agent_timeout' }), 1);
  await nothingStored(t, chat, conversation.id);
});

t.test('a stream that ends without its final event: an error frame', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  chat.agent.expect({ tokens: ['cut ', 'short'], omitFinal: true });
  const result = await send(chat.url, 'ana', conversation.id, 'q');
  t.same(terminalOf(result), { type: 'error', error: 'agent_incomplete', message: 'the agent ended the answer without its final event' });
  await nothingStored(t, chat, conversation.id);
});

t.test('malformed agent events: not JSON, a bad token, bad citations', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  chat.agent.expect(
    { rawData: ['{"type":"token","text":"ok"}', 'not json'] },
    { rawData: ['{"type":"token","text":7}'] },
    { rawData: ['{"type":"token","text":"ok"}', '{"type":"final","citations":[{"chunk_id":"c","document_id":"d","source":"s","section_path":"not a list"}]}'] },
    { rawData: ['[1,2]'] },
  );
  for (let i = 0; i < 4; i++) {
    const result = await send(chat.url, 'ana', conversation.id, 'q');
    const terminal = terminalOf(result);
    t.equal(terminal?.type === 'error' && terminal.error, 'agent_malformed', `case ${i}: ${JSON.stringify(terminal)}`);
  }
  await nothingStored(t, chat, conversation.id);
});

t.test('unknown agent event types are skipped', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  chat.agent.expect({ rawData: ['{"type":"token","text":"a"}', '{"type":"progress","step":"retrieval"}', '{"type":"token","text":"b"}', '{"type":"final","citations":[]}'] });
  const result = await send(chat.url, 'ana', conversation.id, 'q');
  t.equal(answerOf(result), 'ab');
  t.equal(terminalOf(result)?.type, 'done');
});

t.test('an answer that cannot be stored: empty, or over 8000 characters', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  chat.agent.expect({ tokens: [] }, { tokens: Array.from({ length: 30 }, () => 'x'.repeat(300)) });
  const empty = await send(chat.url, 'ana', conversation.id, 'q');
  t.same(terminalOf(empty), { type: 'error', error: 'answer_invalid', message: 'the agent returned an empty answer' });
  const long = await send(chat.url, 'ana', conversation.id, 'q');
  t.equal(answerOf(long).length, 7800, 'relayed up to the limit');
  t.same(terminalOf(long), { type: 'error', error: 'answer_invalid', message: 'the answer is longer than 8000 characters and cannot be stored' });
  await nothingStored(t, chat, conversation.id);
});

t.test('an answer holding NUL, which the store cannot hold: answer_invalid at that token, nothing stored', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  chat.agent.expect({ tokens: ['fine ', 'bro\u0000ken', ' never sent'] });
  const result = await send(chat.url, 'ana', conversation.id, 'q');
  t.equal(answerOf(result), 'fine ', 'relayed up to the bad token');
  t.same(terminalOf(result), { type: 'error', error: 'answer_invalid', message: 'the answer holds a NUL character (\\u0000) and cannot be stored' });
  await nothingStored(t, chat, conversation.id);
});

t.test('an answer with half a surrogate pair, which the store would turn into U+FFFD: answer_invalid, nothing stored', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  chat.agent.expect({ tokens: ['hot ', '\ud83d'] }, { tokens: ['hot ', '\ud83d', '\udd25'] });
  const broken = await send(chat.url, 'ana', conversation.id, 'q');
  t.equal(answerOf(broken), 'hot \ud83d', 'relayed as it came');
  t.same(terminalOf(broken), { type: 'error', error: 'answer_invalid', message: 'the answer holds half a surrogate pair and cannot be stored' });
  await nothingStored(t, chat, conversation.id);

  const split = await send(chat.url, 'ana', conversation.id, 'q');
  const done = terminalOf(split);
  t.match(done, { type: 'done', message: { content: 'hot 🔥' } }, 'a pair split over two tokens is whole in the answer');
  const stored = await getConversation(chat.url, 'ana', conversation.id);
  t.same(stored.messages?.[1], done?.type === 'done' && done.message, 'done carries the stored message');
});

t.test('an answer of exactly 8000 characters with a surrogate pair split over two tokens is stored, not refused as 8001', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  // 7998 + one emoji (its halves in two tokens) + 'y': 8000 characters as a reader counts them.
  chat.agent.expect({ tokens: [`${'x'.repeat(7998)}\ud83d`, '\udd25y'] });
  const result = await send(chat.url, 'ana', conversation.id, 'q');
  const done = terminalOf(result);
  t.match(done, { type: 'done', message: { content: `${'x'.repeat(7998)}🔥y` } });
  t.equal(answerOf(result), `${'x'.repeat(7998)}🔥y`, 'every token relayed');
  const stored = await getConversation(chat.url, 'ana', conversation.id);
  t.equal(stored.messages?.[1]?.content, `${'x'.repeat(7998)}🔥y`);
});

t.test('a store failure at the end: an error frame, and the conversation is as it was', async (t) => {
  const shared = await freshChatDatabase(t);
  const writer = new MongoClient(shared.uri, { serverSelectionTimeoutMS: 5_000 });
  await writer.connect();
  t.teardown(() => writer.close());
  const chat = await startChat(t, { db: writer.db() });
  const conversation = await createConversation(chat.url, 'ana');
  let release!: () => void;
  chat.agent.expect({ tokens: ['lost'], holdAfter: 1, release: new Promise<void>((resolve) => (release = resolve)) });
  const pending = send(chat.url, 'ana', conversation.id, 'q');
  await chat.agent.called(1);
  await writer.close();
  release();
  const result = await pending;
  t.same(terminalOf(result), { type: 'error', error: 'store_failed', message: 'the answer could not be stored; please send the question again' });
  const stored = await conversationsOf(shared.db).findOne({});
  t.same(stored?.messages, []);
});
