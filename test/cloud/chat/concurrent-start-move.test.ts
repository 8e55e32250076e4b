import t from 'tap';
import { ObjectId, type Document } from 'mongodb';
import { MongoConversationStore } from '../../../cloud/chat/mongo-store.js';
import { conversationsOf } from './support/harness.js';
import { dbWith } from '../../support/db-with.js';
import { freshChatDatabase } from './support/mongo.js';

/** A conversation as an earlier version stored it in the single `conversations` collection. */
function legacyConversation(owner: string, title: string): Document {
  const at = new Date('2026-01-02T03:04:05Z');
  return {
    _id: new ObjectId(),
    user_id: owner,
    title,
    messages: [
      { id: new ObjectId().toHexString(), role: 'user', content: `asked by ${owner}`, created_at: at },
      { id: new ObjectId().toHexString(), role: 'assistant', content: 'answered', citations: '[]', created_at: at },
    ],
    message_count: 2,
    created_at: at,
    updated_at: at,
  };
}

t.test('two replicas starting at once: a conversation deleted through the first after it moved it stays deleted', async (t) => {
  const { db } = await freshChatDatabase(t);
  const legacy = db.collection('conversations');
  const deleted = legacyConversation('ana', 'Boiler');
  const renamed = legacyConversation('ben', 'Lights');
  await legacy.insertMany([deleted, renamed]);
  // Replica B has read the whole single collection into its cursor's batch before replica A moves anything.
  const batchOfB = await legacy.find({}).toArray();

  const replicaA = new MongoConversationStore(db);
  t.same(await replicaA.start(), { moved: 2, ownerless: 0 }, 'replica A moves both');
  t.ok(await replicaA.remove(deleted._id.toHexString(), 'ana'), "ana deletes hers through replica A");
  t.ok(await replicaA.rename(renamed._id.toHexString(), 'ben', 'Lights, renamed', new Date()), 'ben renames his through replica A');

  let walked = 0;
  const replicaB = new MongoConversationStore(
    dbWith(db, {
      conversations: {
        find: () =>
          (async function* () {
            for (const doc of batchOfB) {
              walked += 1;
              yield doc;
            }
          })(),
      },
    }),
  );
  t.same(await replicaB.start(), { moved: 0, ownerless: 0 }, 'replica B, reaching its batch, moves nothing');
  t.equal(walked, 2, 'replica B walked both conversations of its batch');
  t.equal(await replicaA.get(deleted._id.toHexString(), 'ana'), undefined, 'the deleted conversation is not found');
  t.equal(await conversationsOf(db, 'ana').countDocuments({ _id: deleted._id }), 0, 'nor stored in her collection');
  t.equal((await replicaA.get(renamed._id.toHexString(), 'ben'))?.title, 'Lights, renamed', 'the copy replica A moved is kept as it is');
  t.equal(await legacy.countDocuments({}), 0, 'nothing is left in the single collection');
});
