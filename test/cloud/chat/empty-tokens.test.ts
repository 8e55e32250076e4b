/**
 * An empty token is silence, like a keep-alive comment: it is not relayed. Relayed, an agent looping on
 * empty tokens made the service queue one frame per token for a slow browser, without limit (they add
 * nothing to the answer's 8000-character cap).
 */
import t from 'tap';
import { answerOf, createConversation, getConversation, metricValue, send, startChat, terminalOf } from './support/harness.js';

const EMPTY_VERBATIM = '{"type":"token","text":""}';
/** An empty token in a layout the relay parses instead of reading verbatim. */
const EMPTY_PARSED = '{"text": "", "type": "token"}';

t.test('empty tokens between real ones are not relayed; the browser gets the real tokens and the stored answer is whole', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  const empties = (count: number) => Array.from({ length: count }, (_, i) => (i % 2 === 0 ? EMPTY_VERBATIM : EMPTY_PARSED));
  chat.agent.expect({
    rawData: [
      ...empties(300),
      '{"type":"token","text":"Hello"}',
      ...empties(1_000),
      '{"type":"token","text":", "}',
      ...empties(1_000),
      '{"type":"token","text":"world"}',
      ...empties(300),
      '{"type":"final","citations":[]}',
    ],
  });

  const result = await send(chat.url, 'ana', conversation.id, 'Say hello');

  t.equal(result.status, 200);
  t.same(
    result.frames.slice(0, -1).map((f) => f.frame),
    ['Hello', ', ', 'world'].map((text) => ({ type: 'token', text })),
    'only the real tokens are token frames',
  );
  t.same(
    result.frames.map((f) => f.id),
    ['1', '2', '3', '4'],
    'ids count the relayed frames only',
  );
  const done = terminalOf(result);
  if (done?.type !== 'done') throw new Error(`expected done, got ${JSON.stringify(done)}`);
  t.equal(done.message.content, 'Hello, world');
  t.equal(answerOf(result), 'Hello, world');
  t.equal(await metricValue(chat.registry, 'chat_tokens_relayed_total'), 3, 'empty tokens are not counted as relayed');
  const stored = await getConversation(chat.url, 'ana', conversation.id);
  t.same(
    stored.messages?.map((m) => m.content),
    ['Say hello', 'Hello, world'],
  );
});

t.test('an answer of nothing but empty tokens is an empty answer: no token frame, an answer_invalid error, nothing stored', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  chat.agent.expect({ rawData: [EMPTY_VERBATIM, EMPTY_PARSED, EMPTY_VERBATIM, '{"type":"final"}'] });

  const result = await send(chat.url, 'ana', conversation.id, 'Anything?');

  t.same(
    result.frames.map((f) => f.frame),
    [{ type: 'error', error: 'answer_invalid', message: 'the agent returned an empty answer' }],
  );
  t.equal((await getConversation(chat.url, 'ana', conversation.id)).messages?.length, 0);
});
