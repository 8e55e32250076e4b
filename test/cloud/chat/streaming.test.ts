import { connect } from 'node:net';
import t from 'tap';
import { ObjectId } from 'mongodb';
import { answerOf, claimsOf, createConversation, getConversation, histogramCount, metricValue, openSend, OpenStream, send, startChat, terminalOf } from './support/harness.js';

const CITATIONS = [
  { chunk_id: 'c-1', document_id: 'doc-9', source: 'manuals/hvac.pdf', section_path: ['Operation', 'Night mode'] },
  { chunk_id: 'c-2', document_id: 'doc-9', source: 'manuals/hvac.pdf', section_path: [], page: 12, extra: { nested: [1, 'two', null] } },
];

t.test('tokens are relayed in order as token frames, then done carries the saved message', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  chat.agent.expect({ tokens: ['The ', 'heating ', 'runs ', 'at ', 'night.'], citations: CITATIONS });

  const result = await send(chat.url, 'ana', conversation.id, 'When does the heating run?');

  t.equal(result.status, 200);
  t.match(result.headers.get('content-type'), /^text\/event-stream/);
  t.equal(result.headers.get('x-accel-buffering'), 'no');
  t.equal(result.headers.get('content-encoding'), null, 'the stream is never compressed');
  t.match(result.headers.get('cache-control'), /no-transform/);
  t.same(
    result.frames.slice(0, 5).map((f) => f.frame),
    ['The ', 'heating ', 'runs ', 'at ', 'night.'].map((text) => ({ type: 'token', text })),
  );
  t.equal(result.frames.length, 6);
  const ids = result.frames.map((f) => Number(f.id));
  t.ok(ids.every((id, i) => Number.isInteger(id) && (i === 0 || id > (ids[i - 1] ?? Infinity))), `ids increase: ${ids.join(',')}`);

  const done = terminalOf(result);
  if (done?.type !== 'done') throw new Error(`expected done, got ${JSON.stringify(done)}`);
  t.match(done.message.id, /^[0-9a-f]{24}$/);
  t.equal(done.message.role, 'assistant');
  t.equal(done.message.content, 'The heating runs at night.');
  t.same(done.message.citations, CITATIONS, 'citations exactly as the agent gave them');
  t.equal(new Date(done.message.createdAt).toISOString(), done.message.createdAt);

  const stored = await getConversation(chat.url, 'ana', conversation.id);
  t.equal(stored.messages?.length, 2);
  t.same(stored.messages?.[0], { id: stored.messages?.[0]?.id, role: 'user', content: 'When does the heating run?', createdAt: stored.messages?.[0]?.createdAt });
  t.same(stored.messages?.[1], done.message, 'reopening shows the same message: id, content and citations unchanged');
  t.ok(stored.updatedAt > conversation.updatedAt, 'updatedAt moved');
  t.same(chat.agent.unexpected, []);
  t.equal(await metricValue(chat.registry, 'chat_streams_completed_total'), 1);
  t.equal(await metricValue(chat.registry, 'chat_tokens_relayed_total'), 5);
  t.equal(await histogramCount(chat.registry, 'chat_conversation_read_seconds'), 1, 'the read before the agent call is timed');
  t.equal(await histogramCount(chat.registry, 'chat_agent_response_seconds'), 1, 'the wait for the agent is timed');
  t.equal(await histogramCount(chat.registry, 'chat_time_to_first_token_seconds'), 1);
});

t.test('the agent call: POST /ask with question, history, stream true, SSE accept and the claims verbatim', async (t) => {
  const chat = await startChat(t, { historyMaxMessages: 3 });
  const conversation = await createConversation(chat.url, 'ana');
  chat.agent.expect({ tokens: ['one'] }, { tokens: ['two'] }, { tokens: ['three'] });
  await send(chat.url, 'ana', conversation.id, 'q1');
  await send(chat.url, 'ana', conversation.id, 'q2');
  await send(chat.url, 'ana', conversation.id, 'q3');

  t.equal(chat.agent.calls.length, 3);
  const [first, , third] = chat.agent.calls;
  t.same(first?.body, { question: 'q1', history: [], stream: true });
  t.same(third?.body, {
    question: 'q3',
    history: [
      { role: 'assistant', content: 'one' },
      { role: 'user', content: 'q2' },
      { role: 'assistant', content: 'two' },
    ],
    stream: true,
  }, 'the last HISTORY_MAX_MESSAGES messages, oldest first, as {role, content}');
  t.equal(third?.headers.accept, 'text/event-stream');
  t.equal(third?.headers['x-gateway-claims'], claimsOf('ana'), 'forwarded verbatim');
  t.match(third?.headers['content-type'], /^application\/json/);
});

t.test('a claims header in the standard base64 alphabet is forwarded byte for byte', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'u>>>???');
  chat.agent.expect({ tokens: ['ok'] });
  const header = `${Buffer.from(JSON.stringify({ sub: 'u>>>???', memberships: [] })).toString('base64')}`;
  const res = await fetch(`${chat.url}/conversations/${conversation.id}/messages`, {
    method: 'POST',
    headers: { 'x-gateway-claims': header, 'content-type': 'application/json' },
    body: JSON.stringify({ content: 'hello' }),
  });
  await res.text();
  t.equal(res.status, 200);
  t.equal(chat.agent.calls[0]?.headers['x-gateway-claims'], header);
});

t.test('routes answer under /chat as well as at the root', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  chat.agent.expect({ tokens: ['prefixed'] });
  const result = await send(chat.url, 'ana', conversation.id, 'through the ingress', '/chat');
  t.equal(terminalOf(result)?.type, 'done');
  t.equal(answerOf(result), 'prefixed');
});

t.test('a final event without citations stores a message without citations; an empty list stays empty', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  chat.agent.expect({ tokens: ['no sources'] }, { tokens: ['empty sources'], citations: [] });
  const first = terminalOf(await send(chat.url, 'ana', conversation.id, 'a'));
  const second = terminalOf(await send(chat.url, 'ana', conversation.id, 'b'));
  t.equal(first?.type === 'done' && 'citations' in first.message, false);
  t.same(second?.type === 'done' && second.message.citations, []);
  const stored = await getConversation(chat.url, 'ana', conversation.id);
  t.notOk(stored.messages?.[1] && 'citations' in stored.messages[1]);
  t.same(stored.messages?.[3]?.citations, []);
});

t.test('citations the database cannot hold as documents (dotted and $ keys, NUL, half a surrogate pair) are stored unchanged', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  const citations = [
    { chunk_id: 'c-1', document_id: 'd-1', source: 'manuals/hvac.pdf', section_path: ['Night mode'], metadata: { 'page.number': 12, $score: 0.7 } },
    { chunk_id: 'c-2', document_id: 'd-2', source: 'odd\u0000name \ud83d.pdf', section_path: ['\udc00'] },
  ];
  chat.agent.expect({ tokens: ['Sourced.'], citations });
  const result = await send(chat.url, 'ana', conversation.id, 'with odd sources');
  const done = terminalOf(result);
  t.match(done, { type: 'done', message: { content: 'Sourced.' } }, 'the answer is stored, not lost to its citations');
  t.same(done?.type === 'done' && done.message.citations, citations);
  const stored = await getConversation(chat.url, 'ana', conversation.id);
  t.same(stored.messages?.[1]?.citations, citations, 'reopened exactly as the agent gave them');
});

t.test('tokens reach the browser before the agent has finished', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  let release!: () => void;
  chat.agent.expect({ tokens: ['first', ' second'], holdAfter: 1, release: new Promise<void>((resolve) => (release = resolve)) });
  const stream = await openSend(chat.url, 'ana', conversation.id, { content: 'stream it' });
  if (!(stream instanceof OpenStream)) throw new Error(`expected a stream, got ${stream.status}`);
  await stream.until(() => stream.frames.length >= 1);
  t.same(stream.frames[0]?.frame, { type: 'token', text: 'first' }, 'the first token arrived while the agent still holds the rest');
  t.equal(stream.frames.length, 1);
  release();
  await stream.ended;
  t.equal(stream.frames[stream.frames.length - 1]?.frame.type, 'done');
});

t.test('message ids are fresh ObjectIds, distinct from the conversation id', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  chat.agent.expect({ tokens: ['x'] });
  await send(chat.url, 'ana', conversation.id, 'y');
  const stored = await getConversation(chat.url, 'ana', conversation.id);
  const ids = [conversation.id, ...(stored.messages ?? []).map((m) => m.id)];
  t.equal(new Set(ids).size, 3);
  for (const id of ids) t.ok(ObjectId.isValid(id) && /^[0-9a-f]{24}$/.test(id), id);
});

t.test('a send asking for Connection: close gets its stream, then the connection closes', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  chat.agent.expect({ tokens: ['Closed ', 'after.'] });
  const { hostname, port } = new URL(chat.url);
  const body = JSON.stringify({ content: 'And then?' });
  const socket = connect(Number(port), hostname);
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  const ended = new Promise<void>((resolve) => socket.once('end', () => resolve()));
  socket.write(
    `POST /conversations/${conversation.id}/messages HTTP/1.1\r\nhost: ${hostname}:${port}\r\nx-gateway-claims: ${claimsOf('ana')}\r\n` +
      `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
  await ended;
  socket.destroy();
  const head = text.slice(0, text.indexOf('\r\n\r\n')).toLowerCase();
  t.match(head, /^http\/1\.1 200/);
  t.notMatch(head, /connection: keep-alive/, 'the answer does not keep the connection');
  t.match(text, /event: done|"type":"done"/, 'the whole stream came before the close');
  t.same(chat.agent.unexpected, []);
});

