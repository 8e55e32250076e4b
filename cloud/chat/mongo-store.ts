/**
 * The conversation store on the MongoDB wire protocol (MongoDB 6+, or FerretDB 1.24 in development and
 * tests). Uses only what FerretDB 1.24 supports: no aggregation `$size`, no `$slice` projection, no
 * projection on findAndModify, no update pipelines. So the message count is kept beside the messages
 * in the same update, and the list reads it instead of counting.
 *
 * Conversations are spread over {@link CONVERSATION_SHARDS} collections by owner
 * (`conversations_00` … `conversations_31`). FerretDB 1.24 on PostgreSQL serves no filter from an
 * index: every read, the one before each answer included, scans its whole collection and decompresses
 * every conversation stored there. Every route names its owner (the caller's `sub`), so each operation
 * goes to one collection and scans a thirty-second of the conversations. On MongoDB proper each read
 * is an index lookup either way. Conversations stored by earlier versions in the single `conversations`
 * collection are moved at start.
 */
import { ObjectId, type Collection, type Db, type Filter } from 'mongodb';
import { describeError, type SafeMessageError } from '../../shared/describe-error.js';
import { ConversationLock, isDuplicateKey, LEASE_COLLECTION, type ConversationLockOptions, type LeaseDocument } from './conversation-lock.js';
import {
  DEFAULT_TITLE,
  MAX_MESSAGES,
  MESSAGES_PER_EXCHANGE,
  type ChatMessage,
  type Citation,
  historyOf,
  type Conversation,
  type ConversationSummary,
} from './conversation.js';
import {
  InvalidCursorError,
  type AppendOutcome,
  type ConversationStore,
  type Exchange,
  type ListPage,
  type ListQuery,
  type SendContext,
} from './store.js';

interface MessageDocument {
  id: string;
  role: 'user' | 'assistant';
  content: string;
  /**
   * The citations as JSON text. Their keys and strings are the agent's, and a document cannot hold
   * every one unchanged: a key with a dot or a leading `$` and a NUL are refused (the whole exchange
   * with them), half a surrogate pair becomes U+FFFD. Messages stored before are arrays.
   */
  citations?: string | Citation[];
  created_at: Date;
}

interface ConversationDocument {
  _id: ObjectId;
  user_id: string;
  title: string;
  messages: MessageDocument[];
  /** Always equal to `messages.length`; kept because FerretDB cannot compute `$size`. */
  message_count: number;
  created_at: Date;
  updated_at: Date;
}

export interface MongoConversationStoreOptions {
  collection?: string;
  lockCollection?: string;
  lock?: Partial<ConversationLockOptions>;
}

/**
 * How many collections the conversations are spread over. Fixed: another count would look for every
 * conversation in another collection.
 */
export const CONVERSATION_SHARDS = 32;

/**
 * The collection holding the conversations of `userId`: `{base}_{nn}`, nn the owner's FNV-1a hash
 * (over its UTF-16 code units) modulo {@link CONVERSATION_SHARDS}, two digits.
 */
export function conversationCollectionName(userId: string, base = 'conversations'): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < userId.length; i++) hash = Math.imul(hash ^ userId.charCodeAt(i), 0x01000193);
  return shardName(base, (hash >>> 0) % CONVERSATION_SHARDS);
}

function shardName(base: string, n: number): string {
  return `${base}_${String(n).padStart(2, '0')}`;
}

/** The index the list query runs on. */
export const LIST_INDEX = { key: { user_id: 1, updated_at: -1 } as const, name: 'user_id_1_updated_at_-1' };

/**
 * What a send reads: the title, and of each message only its role and content (FerretDB 1.24 has no
 * `$slice` projection, so the window of recent messages is cut here).
 */
const SEND_PROJECTION = { _id: 0, title: 1, 'messages.role': 1, 'messages.content': 1 } as const;

interface SendDocument {
  title: string;
  messages?: Array<Pick<MessageDocument, 'role' | 'content'>>;
}

/** The last message a conversation may already hold for one more exchange to fit: index 98. */
const LAST_FREE_INDEX = MAX_MESSAGES - MESSAGES_PER_EXCHANGE;

function objectIdOf(id: string): ObjectId | undefined {
  return /^[0-9a-f]{24}$/.test(id) ? ObjectId.createFromHexString(id) : undefined;
}

function messageOf(doc: MessageDocument): ChatMessage {
  const message: ChatMessage = { id: doc.id, role: doc.role, content: doc.content, createdAt: doc.created_at };
  if (doc.citations !== undefined) message.citations = typeof doc.citations === 'string' ? (JSON.parse(doc.citations) as Citation[]) : doc.citations;
  return message;
}

function messageDocumentOf(message: ChatMessage): MessageDocument {
  const doc: MessageDocument = { id: message.id, role: message.role, content: message.content, created_at: message.createdAt };
  if (message.citations !== undefined) doc.citations = JSON.stringify(message.citations);
  return doc;
}

function conversationOf(doc: ConversationDocument): Conversation {
  return {
    id: doc._id.toHexString(),
    userId: doc.user_id,
    title: doc.title,
    createdAt: doc.created_at,
    updatedAt: doc.updated_at,
    messages: (doc.messages ?? []).map(messageOf),
  };
}

function summaryOf(doc: Omit<ConversationDocument, 'messages'>): ConversationSummary {
  return {
    id: doc._id.toHexString(),
    userId: doc.user_id,
    title: doc.title,
    createdAt: doc.created_at,
    updatedAt: doc.updated_at,
    messageCount: doc.message_count,
  };
}

function encodeCursor(doc: Omit<ConversationDocument, 'messages'>): string {
  return Buffer.from(`${doc.updated_at.getTime()}:${doc._id.toHexString()}`, 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): { updatedAt: Date; id: ObjectId } {
  const match = /^(\d{1,15}):([0-9a-f]{24})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!match?.[1] || !match[2]) throw new InvalidCursorError();
  return { updatedAt: new Date(Number(match[1])), id: ObjectId.createFromHexString(match[2]) };
}

/**
 * An append's update failed, and so did the read asking whether it landed anyway (a connection that
 * broke after the database committed). The exchange may be stored: the caller must not be told to send
 * it again, which could store it twice, but to reload the conversation.
 */
export class AppendUnconfirmedError extends Error implements SafeMessageError {
  readonly messageIsSafe = true;
  constructor(id: string, writeFailure: unknown, readFailure: unknown) {
    super(
      `the append to conversation ${id} failed (${describeError(writeFailure)}), and reading whether it landed failed too (${describeError(readFailure)})`,
      { cause: writeFailure },
    );
    this.name = 'AppendUnconfirmedError';
  }
}

export class MongoConversationStore implements ConversationStore {
  /** Where earlier versions kept every conversation, and the prefix of the collections now. */
  private readonly base: string;
  private readonly legacy: Collection<ConversationDocument>;
  private readonly shards = new Map<string, Collection<ConversationDocument>>();
  private readonly lock: ConversationLock;

  constructor(
    private readonly db: Db,
    options: MongoConversationStoreOptions = {},
  ) {
    this.base = options.collection ?? 'conversations';
    this.legacy = db.collection<ConversationDocument>(this.base);
    this.lock = new ConversationLock(db.collection<LeaseDocument>(options.lockCollection ?? LEASE_COLLECTION), options.lock);
  }

  /** The collection of `userId`'s conversations. */
  private conversations(userId: string): Collection<ConversationDocument> {
    const name = conversationCollectionName(userId, this.base);
    let collection = this.shards.get(name);
    if (collection === undefined) {
      collection = this.db.collection<ConversationDocument>(name);
      this.shards.set(name, collection);
    }
    return collection;
  }

  /**
   * Creates the list index of every collection and the leases' unique index, then moves the
   * conversations an earlier version left in the single collection. Idempotent. Answers how many
   * conversations were moved, and how many were left there because they name no owner.
   */
  async start(): Promise<{ moved: number; ownerless: number }> {
    const names = Array.from({ length: CONVERSATION_SHARDS }, (_, n) => shardName(this.base, n));
    await Promise.all(names.map((name) => this.db.collection(name).createIndex(LIST_INDEX.key, { name: LIST_INDEX.name })));
    await this.lock.start();
    return this.moveLegacy();
  }

  /**
   * Moves each conversation of the single collection of earlier versions to its owner's collection:
   * inserted there, then deleted here, so a crash between the two leaves it in both and the next start
   * finishes the move. One already there (another replica starting at the same time moved it, and it
   * may have changed since) is kept as it is. Run before the service takes requests; replicas of an
   * earlier version must be stopped first, or what they write meanwhile stays behind until the next
   * start.
   */
  private async moveLegacy(): Promise<{ moved: number; ownerless: number }> {
    let moved = 0;
    let ownerless = 0;
    // Only the ids are walked; each conversation is read again when its turn comes (see moveOne).
    for await (const { _id } of this.legacy.find({}, { projection: { _id: 1 } })) {
      const outcome = await this.moveOne(_id);
      if (outcome === 'moved') moved += 1;
      if (outcome === 'ownerless') ownerless += 1;
    }
    return { moved, ownerless };
  }

  /**
   * Moves one conversation, read here just before its insert rather than taken from the walk's
   * batch: another replica starting at the same time may have moved it since, and its owner deleted
   * it through that replica. Gone from here means moved, and an insert of the copy read earlier would
   * bring a deleted conversation back. What is left open is one round trip, between this read and the
   * insert, in which the other replica would have to finish its whole start and the owner delete.
   */
  private async moveOne(_id: ObjectId): Promise<'moved' | 'there already' | 'gone' | 'ownerless'> {
    const doc = await this.legacy.findOne({ _id });
    if (!doc) return 'gone';
    // No route could ever reach such a document; it is left where it is, and counted.
    if (typeof doc.user_id !== 'string') return 'ownerless';
    let outcome: 'moved' | 'there already' = 'moved';
    try {
      await this.conversations(doc.user_id).insertOne(doc);
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
      outcome = 'there already';
    }
    await this.legacy.deleteOne({ _id });
    return outcome;
  }

  /**
   * Makes appends, renames and deletes still waiting for a conversation's lock give up (they throw
   * `LockAbandonedError` and write nothing), so a stopping service is not held up to the lock's
   * 15 s wait.
   */
  abandonLockWaits(): void {
    this.lock.abandonWaits();
  }

  /** Waits for the leases still being released, so the client can close after. */
  async stop(): Promise<void> {
    await this.lock.settled();
  }

  async create(userId: string, title: string, at: Date): Promise<Conversation> {
    const doc: ConversationDocument = {
      _id: new ObjectId(),
      user_id: userId,
      title,
      messages: [],
      message_count: 0,
      created_at: at,
      updated_at: at,
    };
    await this.conversations(userId).insertOne(doc);
    return conversationOf(doc);
  }

  async list(userId: string, query: ListQuery): Promise<ListPage> {
    const filter: Filter<ConversationDocument> = { user_id: userId };
    if (query.after !== undefined) {
      const cursor = decodeCursor(query.after);
      filter.$or = [{ updated_at: { $lt: cursor.updatedAt } }, { updated_at: cursor.updatedAt, _id: { $lt: cursor.id } }];
    }
    // One query on the list index, whole list or page alike; a page reads one more to know if more remain.
    const found = this.conversations(userId).find(filter, { projection: { messages: 0 } }).sort({ updated_at: -1, _id: -1 });
    if (query.limit === undefined) return { conversations: (await found.toArray()).map(summaryOf) };
    const docs = await found.limit(query.limit + 1).toArray();
    const page = docs.slice(0, query.limit);
    const result: ListPage = { conversations: page.map(summaryOf) };
    const last = page[page.length - 1];
    if (docs.length > query.limit && last) result.next = encodeCursor(last);
    return result;
  }

  async get(id: string, userId: string): Promise<Conversation | undefined> {
    const _id = objectIdOf(id);
    if (!_id) return undefined;
    const doc = await this.conversations(userId).findOne({ _id, user_id: userId });
    return doc ? conversationOf(doc) : undefined;
  }

  async sendContext(id: string, userId: string, recentMessages: number): Promise<SendContext | undefined> {
    const _id = objectIdOf(id);
    if (!_id) return undefined;
    const doc = await this.conversations(userId).findOne<SendDocument>({ _id, user_id: userId }, { projection: SEND_PROJECTION });
    if (!doc) return undefined;
    const messages = doc.messages ?? [];
    return { title: doc.title, messageCount: messages.length, recent: historyOf(messages, recentMessages) };
  }

  async rename(id: string, userId: string, title: string, at: Date): Promise<ConversationSummary | undefined> {
    const _id = objectIdOf(id);
    if (!_id) return undefined;
    const conversations = this.conversations(userId);
    // Ownership first: another user's rename must not take (and hold up) the owner's lock.
    if ((await conversations.countDocuments({ _id, user_id: userId }, { limit: 1 })) === 0) return undefined;
    return this.lock.withLock(id, async () => {
      const result = await conversations.updateOne({ _id, user_id: userId }, { $set: { title }, $max: { updated_at: at } });
      if (result.matchedCount === 0) return undefined;
      const doc = await conversations.findOne({ _id, user_id: userId }, { projection: { messages: 0 } });
      return doc ? summaryOf(doc) : undefined;
    });
  }

  async remove(id: string, userId: string): Promise<boolean> {
    const _id = objectIdOf(id);
    if (!_id) return false;
    // Ownership first, as for a rename. Then under the lock: FerretDB applies an append as a read and
    // a write back, and a delete landing between the two would leave the append reporting success
    // for an exchange that is not stored.
    const conversations = this.conversations(userId);
    if ((await conversations.countDocuments({ _id, user_id: userId }, { limit: 1 })) === 0) return false;
    return this.lock.withLock(id, async () => {
      const result = await conversations.deleteOne({ _id, user_id: userId });
      return result.deletedCount === 1;
    });
  }

  async appendExchange(id: string, userId: string, exchange: Exchange): Promise<AppendOutcome> {
    const _id = objectIdOf(id);
    if (!_id) return 'missing';
    const conversations = this.conversations(userId);
    const owned = { _id, user_id: userId };
    // The cap lives in the filter: the update only matches while index 98 is still free.
    const withRoom: Filter<ConversationDocument> = { ...owned, [`messages.${LAST_FREE_INDEX}`]: { $exists: false } };
    // updated_at by $max: an exchange stamped earlier may be written after one stamped later (it waited
    // for the lock), and the conversation's place in the list must not move back.
    const push = {
      $push: { messages: { $each: [messageDocumentOf(exchange.question), messageDocumentOf(exchange.answer)] } },
      $inc: { message_count: MESSAGES_PER_EXCHANGE },
    };
    return this.lock.withLock(id, async () => {
      try {
        if (exchange.seededTitle !== undefined) {
          const seeded = await conversations.updateOne(
            { ...withRoom, title: DEFAULT_TITLE, 'messages.0': { $exists: false } },
            { ...push, $set: { title: exchange.seededTitle }, $max: { updated_at: exchange.at } },
          );
          if (seeded.matchedCount === 1) return 'appended';
        }
        const appended = await conversations.updateOne(withRoom, { ...push, $max: { updated_at: exchange.at } });
        if (appended.matchedCount === 1) return 'appended';
      } catch (err) {
        // The reply may be what failed, not the write: told "not stored", the user would send again and
        // the exchange would be stored twice.
        if (await this.holdsMessage(id, conversations, owned, exchange.answer.id, err)) return 'appended';
        throw err;
      }
      const exists = await conversations.countDocuments(owned, { limit: 1 });
      return exists > 0 ? 'full' : 'missing';
    });
  }

  /**
   * Whether conversation `id` holds the message `messageId`, asked after an update of its append threw
   * `failure`. The update may have landed all the same: the connection broke after the database
   * committed and before its reply, and a standalone server such as FerretDB has no retryable writes,
   * so the driver rejects with a network error. Asked under the append's lease, so no other writer can
   * have added or removed it meanwhile. Throws {@link AppendUnconfirmedError} when this read fails too.
   * Left open: an update the database is still applying when this read runs (the connection broke
   * before the database had finished it) lands after the read said no.
   */
  private async holdsMessage(
    id: string,
    conversations: Collection<ConversationDocument>,
    owned: Filter<ConversationDocument>,
    messageId: string,
    failure: unknown,
  ): Promise<boolean> {
    try {
      return (await conversations.countDocuments({ ...owned, 'messages.id': messageId }, { limit: 1 })) > 0;
    } catch (err) {
      throw new AppendUnconfirmedError(id, failure, err);
    }
  }
}
