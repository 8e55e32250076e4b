/**
 * The relay frames most tokens without parsing them (`verbatimTokenLiteral`) and reads plain ASCII
 * chunks without a UTF-8 decoder. These guard that every other token still reaches the browser and the
 * store exactly as the agent meant it: escapes, quotes, other key orders and spacing, characters beyond
 * ASCII split across chunks, and a byte order mark inside the answer.
 */
import t from 'tap';
import { AnswerReader, verbatimTokenLiteral } from '../../../cloud/chat/agent-events.js';
import { answerOf, createConversation, getConversation, send, startChat, terminalOf } from './support/harness.js';

t.test('a token event is read verbatim only when its literal is exactly what JSON.stringify gives', async (t) => {
  const verbatim = ['{"type":"token","text":"Hel"}', '{"type":"token","text":""}', '{"type":"token","text":"héllo 👋 \u2028"}'];
  // Messages name cases by number: a raw U+2028 in one would break the TAP stream.
  for (const [i, data] of verbatim.entries()) {
    const literal = verbatimTokenLiteral(data);
    const { text } = JSON.parse(data) as { text: string };
    t.equal(literal, JSON.stringify(text), `verbatim case ${i}: the literal is the serialised text`);
  }
  const parsed = [
    '{"type":"token","text":"a\\nb"}',
    '{"type":"token","text":"say \\"hi\\""}',
    '{"type":"token","text":"\\u00e9"}',
    '{"type":"token","text":"tab\tinside"}',
    '{"type": "token", "text": "spaced"}',
    '{"text":"first","type":"token"}',
    '{"type":"token","text":"x","extra":"y"}',
    '{"type":"token","text":"x"} ',
    '{"type":"token","text":"}',
    '{"type":"token","text":}',
    '{"type":"token","text":7}',
  ];
  for (const [i, data] of parsed.entries()) t.equal(verbatimTokenLiteral(data), undefined, `parsed case ${i}: not read verbatim`);
});

t.test('tokens with escapes, other layouts and characters beyond ASCII reach the browser and the store unchanged', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  const events = [
    '{"type":"token","text":"plain "}',
    '{"type":"token","text":"line\\nbreak "}',
    '{"type":"token","text":"say \\"hi\\" \\\\ "}',
    '{"type":"token","text":"\\u00e9\\ud83d\\ude00 "}',
    '{"type":"token","text":"é👋\u2028 "}',
    '{"type": "token", "text": "spaced "}',
    '{"text":"reordered ","type":"token"}',
    '{"type":"token","text":"\ufeffmark"}',
    '{"type":"final","citations":[]}',
  ];
  chat.agent.expect({ rawData: events });
  const expected = ['plain ', 'line\nbreak ', 'say "hi" \\ ', 'é😀 ', 'é👋\u2028 ', 'spaced ', 'reordered ', '\ufeffmark'];

  const result = await send(chat.url, 'ana', conversation.id, 'Anything odd?');

  t.same(
    result.frames.slice(0, expected.length).map((f) => f.frame),
    expected.map((text) => ({ type: 'token', text })),
  );
  const done = terminalOf(result);
  if (done?.type !== 'done') throw new Error(`expected done, got ${JSON.stringify(done)}`);
  t.equal(done.message.content, expected.join(''));
  t.equal(answerOf(result), expected.join(''));
  const stored = await getConversation(chat.url, 'ana', conversation.id);
  t.equal(stored.messages?.[1]?.content, expected.join(''), 'stored exactly as relayed');
});

t.test('characters split across chunks, a byte order mark opening the body and one inside it', async (t) => {
  const body = new TextEncoder().encode(
    '\ufeffdata: {"type":"token","text":"a"}\n\ndata: {"type":"token","text":"é👋"}\r\n\r\n' +
      'data: {"type":"token","text":"\ufeffb"}\n\ndata: {"type":"final"}\n\n',
  );
  for (const size of [1, 2, 3, 5, 7, body.length]) {
    const reader = new AnswerReader();
    const tokens: Array<[string, string]> = [];
    const done = reader.start((text, literal) => tokens.push([text, literal]));
    for (let i = 0; i < body.length; i += size) reader.chunk(Buffer.from(body.subarray(i, i + size)));
    reader.end();
    t.same(await done, {}, `chunks of ${size} bytes: the final event`);
    t.same(
      tokens,
      ['a', 'é👋', '\ufeffb'].map((text) => [text, JSON.stringify(text)]),
      `chunks of ${size} bytes: the opening mark dropped, the inner one kept, split characters whole`,
    );
  }
});
