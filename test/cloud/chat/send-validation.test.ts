import t from 'tap';
import { call, createConversation, getConversation, metricValue, send, startChat, terminalOf } from './support/harness.js';

t.test('content length edges: 0 and 8001 are refused before the agent; 1 and 8000 go through', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');

  for (const length of [0, 8001]) {
    const result = await send(chat.url, 'ana', conversation.id, 'a'.repeat(length));
    t.equal(result.status, 400, `${length} characters`);
    t.same(result.body, { type: 'Validation Error', message: `content: expected 1 to 8000 characters, got ${length}` });
  }
  t.equal(chat.agent.calls.length, 0, 'the agent was not called for a refused send');

  chat.agent.expect({ tokens: ['one'] }, { tokens: ['eight thousand'] });
  const one = await send(chat.url, 'ana', conversation.id, 'a');
  t.equal(terminalOf(one)?.type, 'done', '1 character');
  const max = await send(chat.url, 'ana', conversation.id, 'b'.repeat(8000));
  t.equal(terminalOf(max)?.type, 'done', '8000 characters');

  const stored = await getConversation(chat.url, 'ana', conversation.id);
  t.same(stored.messages?.map((m) => m.content.length), [1, 3, 8000, 14]);
  t.same(chat.agent.unexpected, []);
});

t.test('characters are counted as a reader counts them: 8000 emoji fit, 8001 do not', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  const over = await send(chat.url, 'ana', conversation.id, '🔥'.repeat(8001));
  t.equal(over.status, 400);
  chat.agent.expect({ tokens: ['hot'] });
  const fits = await send(chat.url, 'ana', conversation.id, '🔥'.repeat(8000));
  t.equal(terminalOf(fits)?.type, 'done');
});

t.test('whitespace is content: a single space and a whitespace-only question are asked, streamed and stored', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  chat.agent.expect({ tokens: ['Ask ', 'away.'], citations: [] }, { tokens: ['Still here.'] });
  const blank = await send(chat.url, 'ana', conversation.id, ' \n\t ');
  t.equal(blank.status, 200);
  t.same(
    blank.frames.slice(0, 2).map((f) => f.frame),
    [
      { type: 'token', text: 'Ask ' },
      { type: 'token', text: 'away.' },
    ],
  );
  const done = terminalOf(blank);
  t.match(done, { type: 'done', message: { role: 'assistant', content: 'Ask away.', citations: [] } });
  const space = await send(chat.url, 'ana', conversation.id, ' ');
  t.equal(terminalOf(space)?.type, 'done', 'a single space is 1 character');
  t.same(
    chat.agent.calls.map((c) => (c.body as { question: string }).question),
    [' \n\t ', ' '],
    'the agent got the questions exactly as typed',
  );

  const stored = await getConversation(chat.url, 'ana', conversation.id);
  t.same(stored.messages?.map((m) => [m.role, m.content]), [
    ['user', ' \n\t '],
    ['assistant', 'Ask away.'],
    ['user', ' '],
    ['assistant', 'Still here.'],
  ]);
  t.equal(done?.type === 'done' && done.message.id, stored.messages?.[1]?.id, 'done carries the stored answer');
  t.equal(stored.title, 'New chat', 'a blank first question leaves the default title, not an empty one');
  t.equal(await metricValue(chat.registry, 'chat_sends_rejected_total', { reason: 'invalid' }), 0);
});

t.test('other bad bodies are 400 with a message naming the problem, and nothing is stored', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  const cases: Array<[unknown, RegExp]> = [
    [{}, /content: expected a string, got nothing/],
    [{ content: 12 }, /content: expected a string, got 12/],
    [{ content: ['hi'] }, /content: expected a string, got an array/],
    [{ content: 'hi', role: 'assistant' }, /role: unknown field/],
    [[{ content: 'hi' }], /body: expected a JSON object, got an array/],
    [{ content: 'before\u0000after' }, /content: NUL \(\\u0000\) cannot be stored/],
    ['{"content":"half \\ud800 pair"}', /content: an unpaired surrogate \(\\ud800\) cannot be stored/],
    ['"just a string"', /request body is not valid JSON/],
    ['{"content": "unterminated', /request body is not valid JSON/],
  ];
  for (const [body, message] of cases) {
    const res = await call(chat.url, 'POST', `/conversations/${conversation.id}/messages`, 'ana', body);
    t.equal(res.status, 400, JSON.stringify(body));
    t.match(res.body, { type: 'Validation Error', message });
  }
  t.equal((await getConversation(chat.url, 'ana', conversation.id)).messages?.length, 0);
  t.equal(chat.agent.calls.length, 0);
  t.equal(await metricValue(chat.registry, 'chat_sends_rejected_total', { reason: 'invalid' }), 7, 'malformed JSON never reaches the handler');
});

t.test('a body over 1 MiB is 413', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  const res = await call(chat.url, 'POST', `/conversations/${conversation.id}/messages`, 'ana', { content: 'x'.repeat(1_100_000) });
  t.equal(res.status, 413);
  t.equal(chat.agent.calls.length, 0);
});

t.test('content is stored exactly as typed; only the title is trimmed', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  chat.agent.expect({ tokens: ['ok'] });
  await send(chat.url, 'ana', conversation.id, '  spaced\n question  ');
  const stored = await getConversation(chat.url, 'ana', conversation.id);
  t.equal(stored.messages?.[0]?.content, '  spaced\n question  ');
  t.equal(stored.title, 'spaced question');
  t.equal((chat.agent.calls[0]?.body as { question: string }).question, '  spaced\n question  ');
});
