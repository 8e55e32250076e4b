/**
 * An append whose write landed but whose reply never came back (the connection broke after FerretDB
 * committed; a standalone server has no retryable writes, so the driver rejects with
 * MongoNetworkError) is stored. The answer used to end with `store_failed` and "please send the
 * question again", and the resend stored the exchange a second time. The store now looks, still under
 * the lease, whether the answer is in the conversation: `done` if it is, the resend advice only if
 * nothing landed, and "reload the conversation" when it cannot tell.
 *
 * On the real FerretDB: the update is really sent and really lands; only its reply is replaced by the
 * error the driver gives for a broken connection.
 */
import t, { type Test } from 'tap';
import { MongoNetworkError, type Db, type Document, type Filter, type UpdateFilter } from 'mongodb';
import { dbWith } from '../../support/db-with.js';
import { conversationsOf, createConversation, getConversation, metricValue, send, startChat, terminalOf, type ChatUnderTest } from './support/harness.js';

interface Breakage {
  /** Whether the update is sent to FerretDB before the connection "breaks". */
  writeLands: boolean;
  /** Whether the store's look for the answer afterwards fails too. */
  lookFails?: boolean;
}

/** A chat whose conversation updates end in a broken connection, after the write or before it. */
async function chatLosingReplies(t: Test, breakage: Breakage): Promise<ChatUnderTest & { updates: () => number }> {
  let updates = 0;
  const chat = await startChat(t, {
    storeDb: (real: Db) => {
      const conversations = conversationsOf(real);
      return dbWith(real, {
        [conversations.collectionName]: {
          updateOne: async (filter: Filter<Document>, update: UpdateFilter<Document>) => {
            updates++;
            if (breakage.writeLands) await conversations.updateOne(filter, update);
            throw new MongoNetworkError('connection reset');
          },
          countDocuments: (filter: Filter<Document>, options?: Document) => {
            if (breakage.lookFails && 'messages.id' in filter) return Promise.reject(new MongoNetworkError('connection reset'));
            return conversations.countDocuments(filter, options);
          },
        },
      });
    },
  });
  return { ...chat, updates: () => updates };
}

for (const [kind, title] of [
  ['seeding the title', undefined],
  ['a plain append', 'Boiler'],
] as const) {
  t.test(`the reply to a landed append is lost (${kind}): done, and the exchange stored once`, async (t) => {
    const chat = await chatLosingReplies(t, { writeLands: true });
    const conversation = await createConversation(chat.url, 'ana', title);
    chat.agent.expect({ tokens: ['Kept ', 'once'] });

    const result = await send(chat.url, 'ana', conversation.id, 'is it stored?');

    const terminal = terminalOf(result);
    t.match(terminal, { type: 'done', message: { role: 'assistant', content: 'Kept once' } }, 'the stream ends with done, not "send again"');
    t.equal(chat.updates(), 1, 'one update was sent, and it landed');
    const stored = await getConversation(chat.url, 'ana', conversation.id);
    t.same(
      stored.messages?.map((m) => [m.role, m.content]),
      [
        ['user', 'is it stored?'],
        ['assistant', 'Kept once'],
      ],
      'the exchange is stored exactly once',
    );
    if (terminal?.type === 'done') t.same(stored.messages?.[1], terminal.message, 'done carries the stored message');
    t.equal(stored.title, title ?? 'is it stored?', 'the title as the one update left it');
    t.equal(await metricValue(chat.registry, 'chat_streams_completed_total'), 1, 'counted as completed');
    t.equal(await metricValue(chat.registry, 'chat_streams_failed_total', { reason: 'store_failed' }), 0, 'not counted as failed');
  });
}

t.test('the connection breaks before an append is written: store_failed, send again, nothing stored', async (t) => {
  const chat = await chatLosingReplies(t, { writeLands: false });
  const conversation = await createConversation(chat.url, 'ana', 'Boiler');
  chat.agent.expect({ tokens: ['Never ', 'kept'] });

  const result = await send(chat.url, 'ana', conversation.id, 'is it stored?');

  t.same(terminalOf(result), { type: 'error', error: 'store_failed', message: 'the answer could not be stored; please send the question again' });
  t.same((await getConversation(chat.url, 'ana', conversation.id)).messages, [], 'nothing stored, so sending again stores it once');
});

t.test('the reply to a landed append is lost and the look for it fails too: store_failed, reload rather than send again', async (t) => {
  const chat = await chatLosingReplies(t, { writeLands: true, lookFails: true });
  const conversation = await createConversation(chat.url, 'ana', 'Boiler');
  chat.agent.expect({ tokens: ['Maybe ', 'kept'] });

  const result = await send(chat.url, 'ana', conversation.id, 'is it stored?');

  t.same(terminalOf(result), {
    type: 'error',
    error: 'store_failed',
    message: 'the connection to the database broke while the answer was being stored; reload the conversation to see whether it was kept',
  });
  const stored = await conversationsOf(chat.db).findOne({});
  t.equal((stored?.messages as unknown[] | undefined)?.length, 2, 'the write did land, which is why the browser is not told to send again');
});
