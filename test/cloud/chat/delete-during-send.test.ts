import t from 'tap';
import type { Document, Filter, ObjectId, UpdateFilter } from 'mongodb';
import { LEASE_COLLECTION } from '../../../cloud/chat/conversation-lock.js';
import { call, conversationsOf, createConversation, send, startChat, terminalOf } from './support/harness.js';
import { dbWith } from '../../support/db-with.js';
import { freshChatDatabase } from './support/mongo.js';

t.test('a conversation deleted while its answer streams: an error frame, and it stays deleted', async (t) => {
  const chat = await startChat(t);
  const conversation = await createConversation(chat.url, 'ana');
  let release!: () => void;
  chat.agent.expect({ tokens: ['too ', 'late'], holdAfter: 1, release: new Promise<void>((resolve) => (release = resolve)) });
  const pending = send(chat.url, 'ana', conversation.id, 'q');
  await chat.agent.called(1);
  t.equal((await call(chat.url, 'DELETE', `/conversations/${conversation.id}`, 'ana')).status, 204);
  release();
  const result = await pending;
  t.same(terminalOf(result), { type: 'error', error: 'conversation_gone', message: 'the conversation was deleted while the answer was streaming' });
  t.equal((await call(chat.url, 'GET', `/conversations/${conversation.id}`, 'ana')).status, 404);
  t.equal(await conversationsOf(chat.db).countDocuments({}), 0, 'the append did not bring it back');
});

t.test('a delete landing between the read and the write back of an append: never a done for an exchange not stored', async (t) => {
  const { db } = await freshChatDatabase(t);
  const conversations = conversationsOf(db);
  let duringAppend: (() => Promise<void>) | undefined;
  let writeBackFound: boolean | undefined;
  // Replica A appends the way FerretDB 1.24 applies an update: it reads the matching document, then
  // writes the changed document back by _id, and reports as matched what the read found.
  const replicaA = await startChat(t, {
    db,
    storeDb: (real) =>
      dbWith(real, {
        [conversations.collectionName]: {
          updateOne: async (filter: Filter<Document>, update: UpdateFilter<Document>) => {
            const matched = await conversations.countDocuments(filter, { limit: 1 });
            if (matched === 0) return { acknowledged: true, matchedCount: 0, modifiedCount: 0, upsertedCount: 0, upsertedId: null };
            const hook = duringAppend;
            duringAppend = undefined;
            await hook?.();
            const written = await conversations.updateOne({ _id: filter._id as ObjectId }, update);
            writeBackFound = written.matchedCount === 1;
            return { ...written, matchedCount: matched };
          },
        },
      }),
  });
  // Replica B deletes; it reports when it finds the conversation's lease taken (its delete waits).
  let deleteWaits!: () => void;
  const deleteWaiting = new Promise<void>((resolve) => (deleteWaits = resolve));
  const replicaB = await startChat(t, {
    db,
    storeDb: (real) =>
      dbWith(real, {
        [LEASE_COLLECTION]: {
          findOne: (filter: Filter<Document>) => {
            deleteWaits();
            return real.collection(LEASE_COLLECTION).findOne(filter);
          },
        },
      }),
  });
  const conversation = await createConversation(replicaA.url, 'ana', 'Boiler');
  let deleted: Promise<number> | undefined;
  duringAppend = async () => {
    deleted = call(replicaB.url, 'DELETE', `/conversations/${conversation.id}`, 'ana').then((res) => res.status);
    await Promise.race([deleted, deleteWaiting]);
  };
  replicaA.agent.expect({ tokens: ['stored ', 'or not'] });
  const result = await send(replicaA.url, 'ana', conversation.id, 'q');
  const terminal = terminalOf(result);
  if (terminal?.type === 'done') t.equal(writeBackFound, true, 'done only for an exchange that was written');
  else t.match(terminal, { type: 'error', error: 'conversation_gone' });
  t.ok(deleted, 'the delete was sent during the append');
  t.equal(await deleted, 204);
  t.equal(await conversations.countDocuments({}), 0, 'the conversation stays deleted');
});
