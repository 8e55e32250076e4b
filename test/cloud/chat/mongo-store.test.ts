import t from 'tap';
import { ObjectId } from 'mongodb';
import { ConversationLock, LEASE_COLLECTION, LockTimeoutError, type LeaseDocument } from '../../../cloud/chat/conversation-lock.js';
import type { ChatMessage } from '../../../cloud/chat/conversation.js';
import { CONVERSATION_SHARDS, conversationCollectionName, MongoConversationStore } from '../../../cloud/chat/mongo-store.js';
import { conversationsOf } from './support/harness.js';
import { freshChatDatabase } from './support/mongo.js';

const message = (role: 'user' | 'assistant', content: string): ChatMessage => ({
  id: new ObjectId().toHexString(),
  role,
  content,
  createdAt: new Date(),
});

const exchange = (n: number, seededTitle?: string) => ({
  question: message('user', `q${n}`),
  answer: message('assistant', `a${n}`),
  at: new Date(),
  ...(seededTitle !== undefined ? { seededTitle } : {}),
});

t.test('appendExchange: appended, full at the cap, missing for another owner or a deleted id', async (t) => {
  const { db } = await freshChatDatabase(t);
  const store = new MongoConversationStore(db);
  await store.start();
  const conversation = await store.create('ana', 'New chat', new Date());
  t.equal(await store.appendExchange(conversation.id, 'ben', exchange(0)), 'missing', 'another owner');
  t.equal(await store.appendExchange(new ObjectId().toHexString(), 'ana', exchange(0)), 'missing', 'an unknown id');
  t.equal(await store.appendExchange('not-an-id', 'ana', exchange(0)), 'missing', 'a malformed id');
  for (let i = 0; i < 50; i++) t.equal(await store.appendExchange(conversation.id, 'ana', exchange(i)), 'appended');
  t.equal(await store.appendExchange(conversation.id, 'ana', exchange(50)), 'full');
  const stored = await store.get(conversation.id, 'ana');
  t.equal(stored?.messages.length, 100);
  t.equal(stored?.messages[99]?.content, 'a49');
  const page = await store.list('ana', { limit: 10 });
  t.equal(page.conversations[0]?.messageCount, 100);
  t.ok(await store.remove(conversation.id, 'ana'));
  t.equal(await store.appendExchange(conversation.id, 'ana', exchange(0)), 'missing');
});

t.test('citations are kept as JSON text, and those stored before as arrays still read back', async (t) => {
  const { db } = await freshChatDatabase(t);
  const store = new MongoConversationStore(db);
  const citations = [{ chunk_id: 'c', document_id: 'd', source: 's', section_path: ['a'], extra: { 'x.y': 1 } }];
  const conversation = await store.create('ana', 'New chat', new Date());
  await store.appendExchange(conversation.id, 'ana', { ...exchange(0), answer: { ...message('assistant', 'a0'), citations } });
  const raw = await conversationsOf(db, 'ana').findOne({ _id: ObjectId.createFromHexString(conversation.id) });
  t.equal(typeof raw?.messages[1].citations, 'string');
  const older = [{ chunk_id: 'o', document_id: 'd', source: 's', section_path: [] }];
  await conversationsOf(db, 'ana').updateOne({ _id: ObjectId.createFromHexString(conversation.id) }, { $set: { 'messages.0.citations': older } });
  const stored = await store.get(conversation.id, 'ana');
  t.same(stored?.messages.map((m) => m.citations), [older, citations]);
});

t.test('sendContext: the title, the count and the last messages as role and content, for the owner only', async (t) => {
  const { db } = await freshChatDatabase(t);
  const store = new MongoConversationStore(db);
  const conversation = await store.create('ana', 'New chat', new Date());
  t.same(await store.sendContext(conversation.id, 'ana', 10), { title: 'New chat', messageCount: 0, recent: [] }, 'an empty conversation');
  for (let i = 0; i < 3; i++) await store.appendExchange(conversation.id, 'ana', exchange(i, i === 0 ? 'First' : undefined));
  t.same(await store.sendContext(conversation.id, 'ana', 3), {
    title: 'First',
    messageCount: 6,
    recent: [
      { role: 'assistant', content: 'a1' },
      { role: 'user', content: 'q2' },
      { role: 'assistant', content: 'a2' },
    ],
  });
  t.equal((await store.sendContext(conversation.id, 'ana', 100))?.recent.length, 6, 'a window larger than the conversation');
  t.same((await store.sendContext(conversation.id, 'ana', 0))?.recent, [], 'no history asked for');
  t.equal(await store.sendContext(conversation.id, 'ben', 10), undefined, 'another owner');
  t.equal(await store.sendContext(new ObjectId().toHexString(), 'ana', 10), undefined, 'an unknown id');
  t.equal(await store.sendContext('not-an-id', 'ana', 10), undefined, 'a malformed id');
});

t.test('appendExchange seeds the title only while it is the default and the conversation is empty', async (t) => {
  const { db } = await freshChatDatabase(t);
  const store = new MongoConversationStore(db);
  const fresh = await store.create('ana', 'New chat', new Date());
  await store.appendExchange(fresh.id, 'ana', exchange(0, 'Seeded'));
  t.equal((await store.get(fresh.id, 'ana'))?.title, 'Seeded');
  await store.appendExchange(fresh.id, 'ana', exchange(1, 'Not again'));
  t.equal((await store.get(fresh.id, 'ana'))?.title, 'Seeded');
  const named = await store.create('ana', 'Mine', new Date());
  t.equal(await store.appendExchange(named.id, 'ana', exchange(0, 'Seeded')), 'appended');
  t.equal((await store.get(named.id, 'ana'))?.title, 'Mine');
});

t.test('renames racing appends lose no message and keep the last title', async (t) => {
  const { db } = await freshChatDatabase(t);
  const store = new MongoConversationStore(db);
  const conversation = await store.create('ana', 'New chat', new Date());
  const work: Array<Promise<unknown>> = [];
  for (let i = 0; i < 10; i++) {
    work.push(store.appendExchange(conversation.id, 'ana', exchange(i)));
    work.push(store.rename(conversation.id, 'ana', `title ${i}`, new Date()));
  }
  await Promise.all(work);
  const stored = await store.get(conversation.id, 'ana');
  t.equal(stored?.messages.length, 20, 'every appended exchange is there');
  t.match(stored?.title, /^title \d$/);
  t.equal((await store.list('ana', { limit: 1 })).conversations[0]?.messageCount, 20);
});

t.test('two stores (two replicas) exclude each other through the lease', async (t) => {
  const { db } = await freshChatDatabase(t);
  const first = new MongoConversationStore(db);
  const second = new MongoConversationStore(db);
  const conversation = await first.create('ana', 'New chat', new Date());
  const outcomes = await Promise.all(
    Array.from({ length: 16 }, (_, i) => (i % 2 === 0 ? first : second).appendExchange(conversation.id, 'ana', exchange(i))),
  );
  t.same(new Set(outcomes), new Set(['appended']));
  t.equal((await first.get(conversation.id, 'ana'))?.messages.length, 32);
  await first.stop();
  await second.stop();
  t.equal(await db.collection(LEASE_COLLECTION).countDocuments({}), 0, 'every lease was released');
});

t.test('a lease left by a crashed holder is taken over once it expires', async (t) => {
  const { db } = await freshChatDatabase(t);
  const leases = db.collection<LeaseDocument>(LEASE_COLLECTION);
  await leases.insertOne({ _id: 'crashed', conversation: 'c1', expires_at: new Date(Date.now() + 300) });
  const lock = new ConversationLock(leases, { leaseMs: 1_000, waitMs: 5_000, pollMs: 5 });
  const ran = await lock.withLock('c1', async () => (await leases.findOne({ conversation: 'c1' }))?._id);
  t.not(ran, undefined, 'the work ran under a lease');
  t.not(ran, 'crashed', 'the work ran under a new lease');
  await lock.settled();
  t.equal(await leases.countDocuments({}), 0);
});

t.test('a lease held alive longer than the wait gives up with LockTimeoutError, and the holder keeps it', async (t) => {
  const { db } = await freshChatDatabase(t);
  const leases = db.collection<LeaseDocument>(LEASE_COLLECTION);
  await leases.insertOne({ _id: 'busy', conversation: 'c2', expires_at: new Date(Date.now() + 60_000) });
  const lock = new ConversationLock(leases, { leaseMs: 1_000, waitMs: 200, pollMs: 5 });
  let ran = false;
  await t.rejects(lock.withLock('c2', async () => (ran = true)), LockTimeoutError);
  t.equal(ran, false);
  t.equal((await leases.findOne({ conversation: 'c2' }))?._id, 'busy');
});

t.test('the lock is released when the work fails, and the next writer proceeds', async (t) => {
  const { db } = await freshChatDatabase(t);
  const lock = new ConversationLock(db.collection<LeaseDocument>(LEASE_COLLECTION));
  await t.rejects(lock.withLock('c3', async () => Promise.reject(new Error('boom'))), /boom/);
  t.equal(await lock.withLock('c3', async () => 'next'), 'next');
});

t.test('updatedAt never goes back: an exchange or rename stamped earlier but written later leaves the later time', async (t) => {
  const { db } = await freshChatDatabase(t);
  const store = new MongoConversationStore(db);
  await store.start();
  const created = new Date('2026-01-01T10:00:00Z');
  const conversation = await store.create('ana', 'New chat', created);
  const later = new Date('2026-01-01T10:05:00Z');
  const earlier = new Date('2026-01-01T10:04:00Z');
  // A send that finished later but got the lock first, then one stamped earlier that waited for it
  // (on another replica, or behind the first in this one's queue).
  t.equal(await store.appendExchange(conversation.id, 'ana', { ...exchange(1), at: later }), 'appended');
  t.equal(await store.appendExchange(conversation.id, 'ana', { ...exchange(2), at: earlier }), 'appended');
  t.same((await store.get(conversation.id, 'ana'))?.updatedAt, later);
  t.same((await store.rename(conversation.id, 'ana', 'Boiler', earlier))?.updatedAt, later, 'a rename stamped earlier');
  const renamed = await store.get(conversation.id, 'ana');
  t.same([renamed?.title, renamed?.messages.length], ['Boiler', 4], 'both exchanges and the rename are stored');
  const evenLater = new Date('2026-01-01T10:06:00Z');
  t.equal(await store.appendExchange(conversation.id, 'ana', { ...exchange(3), at: evenLater }), 'appended');
  t.same((await store.get(conversation.id, 'ana'))?.updatedAt, evenLater, 'a later exchange still moves it on');
});

t.test('conversations are spread over the collections by owner, each owner in one', async (t) => {
  const { db } = await freshChatDatabase(t);
  const store = new MongoConversationStore(db);
  await store.start();
  const owners = Array.from({ length: 64 }, (_, i) => `owner-${i}`);
  const names = new Set(owners.map((owner) => conversationCollectionName(owner)));
  t.ok(names.size > 1, `64 owners fall in ${names.size} collections`);
  for (const name of names) t.match(name, /^conversations_\d\d$/);
  t.equal(conversationCollectionName('owner-1'), conversationCollectionName('owner-1'), 'the same owner, the same collection');
  t.ok([...names].every((name) => Number(name.slice(-2)) < CONVERSATION_SHARDS));
  const made = await Promise.all(owners.map((owner) => store.create(owner, 'New chat', new Date())));
  for (const [i, owner] of owners.entries()) {
    const raw = await conversationsOf(db, owner).findOne({ _id: ObjectId.createFromHexString(made[i]!.id) });
    t.equal(raw?.user_id, owner, `${owner}'s conversation is in ${conversationCollectionName(owner)}`);
    t.same((await store.list(owner, {})).conversations.map((c) => c.id), [made[i]!.id], `${owner} lists only their own`);
  }
  t.equal(await store.get(made[0]!.id, owners[1]!), undefined, "another owner's id is not found");
  const indexes = await conversationsOf(db, 'owner-0').listIndexes().toArray();
  t.ok(indexes.some((index) => index.name === 'user_id_1_updated_at_-1'), 'each collection has the list index');
});

t.test('start moves the conversations of the single collection of earlier versions, keeping what was moved already', async (t) => {
  const { db } = await freshChatDatabase(t);
  const legacy = db.collection('conversations');
  const at = new Date('2026-01-02T03:04:05Z');
  const stored = (owner: string, title: string) => ({
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
  });
  const ana = stored('ana', 'Boiler');
  const ben = stored('ben', 'Lights');
  // Another replica moved this one already and appended to it since: the copy there wins.
  const moved = stored('cleo', 'Doors');
  const newer = { ...moved, title: 'Doors, renamed', message_count: 4, messages: [...moved.messages, ...moved.messages.map((m) => ({ ...m, id: new ObjectId().toHexString() }))] };
  const ownerless = { ...stored('nobody', 'Ownerless'), user_id: 7 };
  await legacy.insertMany([ana, ben, moved, ownerless]);
  await conversationsOf(db, 'cleo').insertOne(newer);

  const store = new MongoConversationStore(db);
  t.same(await store.start(), { moved: 2, ownerless: 1 }, 'two moved; the third was there already; the ownerless one left');
  t.same((await legacy.find({}).toArray()).map((doc) => doc._id.toHexString()), [ownerless._id.toHexString()], 'only the ownerless one is left in the single collection');
  const got = await store.get(ana._id.toHexString(), 'ana');
  t.same(
    { title: got?.title, contents: got?.messages.map((m) => m.content), createdAt: got?.createdAt, updatedAt: got?.updatedAt },
    { title: 'Boiler', contents: ['asked by ana', 'answered'], createdAt: at, updatedAt: at },
    'a moved conversation reads back as it was',
  );
  t.equal((await store.list('ben', {})).conversations[0]?.title, 'Lights');
  t.match(await store.get(moved._id.toHexString(), 'cleo'), { title: 'Doors, renamed', messages: { length: 4 } }, 'the copy moved before is kept, not overwritten');
  t.equal(await store.appendExchange(ana._id.toHexString(), 'ana', exchange(1)), 'appended', 'a moved conversation takes new exchanges');
  t.same(await new MongoConversationStore(db).start(), { moved: 0, ownerless: 1 }, 'a second start has nothing to move');
});
