/**
 * The conversation store port: what the chat service needs from its database, and nothing more.
 * Every call is scoped by the owner, so a document is only ever found by id together with its user.
 */
import type { ChatMessage, Conversation, ConversationSummary, HistoryTurn } from './conversation.js';

/** One exchange to append: the question, the answer, and the title to seed if it is still the default. */
export interface Exchange {
  question: ChatMessage;
  answer: ChatMessage;
  /** Set when this send should seed the title; applied only if the title is still the default. */
  seededTitle?: string;
  at: Date;
}

/** What a send reads before the agent is called, and nothing more. */
export interface SendContext {
  title: string;
  messageCount: number;
  /** The last messages (as many as asked for), oldest first, as `{role, content}`. */
  recent: HistoryTurn[];
}

/**
 * The outcome of an append. `appended`: both messages are stored. `full`: the cap would be passed, and
 * nothing was stored. `missing`: no conversation with that id for that owner (deleted meanwhile).
 */
export type AppendOutcome = 'appended' | 'full' | 'missing';

export interface ListPage {
  conversations: ConversationSummary[];
  /** Opaque cursor of the next page, when a limit was asked for and more remain. */
  next?: string;
}

export interface ListQuery {
  /** Conversations per page; absent, the whole list (from `after` on, when given). */
  limit?: number;
  /** A cursor from a previous page. */
  after?: string;
}

export interface ConversationStore {
  create(userId: string, title: string, at: Date): Promise<Conversation>;
  /**
   * The owner's conversations, newest first by updatedAt, without message bodies: all of them, or one
   * page when `query.limit` is set.
   */
  list(userId: string, query: ListQuery): Promise<ListPage>;
  get(id: string, userId: string): Promise<Conversation | undefined>;
  /**
   * The owner's conversation as a send needs it: its title, its message count and its last
   * `recentMessages` messages; undefined when no conversation has that id for that owner.
   */
  sendContext(id: string, userId: string, recentMessages: number): Promise<SendContext | undefined>;
  rename(id: string, userId: string, title: string, at: Date): Promise<ConversationSummary | undefined>;
  remove(id: string, userId: string): Promise<boolean>;
  /**
   * Appends both messages of an exchange in one update, with updatedAt moved on to the exchange's time
   * (never back: an exchange stamped earlier may be written later), and only while the
   * conversation has room for both. Concurrent appends never lose each other's messages.
   */
  appendExchange(id: string, userId: string, exchange: Exchange): Promise<AppendOutcome>;
}

/** A list cursor that does not decode. The HTTP layer answers 400. */
export class InvalidCursorError extends Error {
  constructor() {
    super('after: not a cursor from a previous page');
    this.name = 'InvalidCursorError';
  }
}
