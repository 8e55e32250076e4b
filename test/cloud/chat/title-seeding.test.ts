import t from 'tap';
import { MAX_TITLE_LENGTH, characterCount, titleFromQuestion } from '../../../cloud/chat/conversation.js';
import { call, createConversation, getConversation, send, startChat, terminalOf } from './support/harness.js';

t.test('titleFromQuestion: folded, trimmed, at most 120 characters, cut on a word boundary', async (t) => {
  t.equal(titleFromQuestion('  Why is  room 4\nso warm?  '), 'Why is room 4 so warm?');
  t.equal(titleFromQuestion('short'), 'short');

  const words = 'Which air handling unit serves the third floor east wing and why does it keep tripping every Monday morning after the weekend setback ends';
  const title = titleFromQuestion(words) ?? '';
  t.ok(characterCount(title) <= MAX_TITLE_LENGTH, `${characterCount(title)} characters`);
  t.ok(words.startsWith(title), 'a prefix of the question');
  t.equal(words[title.length], ' ', 'cut where a word ends');
  t.equal(title, 'Which air handling unit serves the third floor east wing and why does it keep tripping every Monday morning after the');

  const exact = `${'a'.repeat(119)}b`;
  t.equal(titleFromQuestion(`${exact} tail`), exact, 'a word ending exactly at 120 is kept whole');
  t.equal(titleFromQuestion('x'.repeat(300)), 'x'.repeat(120), 'one endless word is cut at 120');
  t.equal(titleFromQuestion(`${'🌡️'.repeat(10)} ${'é'.repeat(200)}`), '🌡️'.repeat(10), 'never splits a character');
  t.equal(titleFromQuestion(`${'word '.repeat(23)}abcdefghij`), 'word '.repeat(23).trim(), 'no trailing space');
  t.equal(titleFromQuestion(' \n\t  '), undefined, 'only whitespace gives no title, not an empty one');
  t.equal(titleFromQuestion(''), undefined);
});

t.test('the first question seeds a default title, trimmed and cut to fit', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  const question = `  ${'Why does the chiller short-cycle '.repeat(8)} `;
  chat.agent.expect({ tokens: ['because'] }, { tokens: ['still'] });
  t.equal(terminalOf(await send(chat.url, 'ana', conversation.id, question))?.type, 'done');
  const seeded = await getConversation(chat.url, 'ana', conversation.id);
  t.equal(seeded.title, titleFromQuestion(question));
  t.ok(characterCount(seeded.title) <= 120 && seeded.title.length > 0);
  t.notOk(seeded.title.endsWith(' '));

  await send(chat.url, 'ana', conversation.id, 'A second question does not retitle');
  t.equal((await getConversation(chat.url, 'ana', conversation.id)).title, seeded.title);
  const listed = (await call(chat.url, 'GET', '/conversations', 'ana')).body as Array<{ title: string }>;
  t.equal(listed[0]?.title, seeded.title);
});

t.test('a title the user chose is never replaced', async (t) => {
  const chat = await startChat(t);
  const named = await createConversation(chat.url, 'ana', 'My own title');
  const renamed = await createConversation(chat.url, 'ana');
  await call(chat.url, 'PATCH', `/conversations/${renamed.id}`, 'ana', { title: 'Renamed first' });
  chat.agent.expect({ tokens: ['a'] }, { tokens: ['b'] });
  await send(chat.url, 'ana', named.id, 'Question one');
  await send(chat.url, 'ana', renamed.id, 'Question two');
  t.equal((await getConversation(chat.url, 'ana', named.id)).title, 'My own title');
  t.equal((await getConversation(chat.url, 'ana', renamed.id)).title, 'Renamed first');
});

t.test('a rename while the first answer streams wins over seeding', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  let release!: () => void;
  chat.agent.expect({ tokens: ['slow'], holdAfter: 0, release: new Promise<void>((resolve) => (release = resolve)) });
  const pending = send(chat.url, 'ana', conversation.id, 'The first question');
  await chat.agent.called(1);
  await call(chat.url, 'PATCH', `/conversations/${conversation.id}`, 'ana', { title: 'Named meanwhile' });
  release();
  t.equal(terminalOf(await pending)?.type, 'done');
  const stored = await getConversation(chat.url, 'ana', conversation.id);
  t.equal(stored.title, 'Named meanwhile');
  t.equal(stored.messages?.length, 2, 'the exchange is stored all the same');
});

t.test('a failed first send leaves the default title for the next one', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  chat.agent.expect({ tokens: ['half'], failAfter: 1 }, { tokens: ['whole'] });
  t.equal(terminalOf(await send(chat.url, 'ana', conversation.id, 'Lost question'))?.type, 'error');
  t.equal((await getConversation(chat.url, 'ana', conversation.id)).title, 'New chat');
  await send(chat.url, 'ana', conversation.id, 'Kept question');
  t.equal((await getConversation(chat.url, 'ana', conversation.id)).title, 'Kept question');
});
