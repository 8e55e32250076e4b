/**
 * The conversation rules of the seed, as plain functions: limits, title seeding and the history window.
 */
import { LONE_SURROGATE } from '../../shared/kinds.js';

/** Cap on messages per conversation (fixed by the seed). */
export const MAX_MESSAGES = 100;
/** Cap on characters per message (fixed by the seed). */
export const MAX_MESSAGE_LENGTH = 8000;
/** Cap on characters of a title (fixed by the seed). */
export const MAX_TITLE_LENGTH = 120;
/** The title of a conversation nobody has named yet. */
export const DEFAULT_TITLE = 'New chat';
/** One send stores two messages: the question and the answer. */
export const MESSAGES_PER_EXCHANGE = 2;

export type Role = 'user' | 'assistant';

/**
 * A grounding source as the agent returns it. The four named fields are checked; the object itself is
 * stored and returned exactly as the agent gave it, extra keys included.
 */
export interface Citation {
  chunk_id: string;
  document_id: string;
  source: string;
  section_path: string[];
  [extra: string]: unknown;
}

export interface ChatMessage {
  id: string;
  role: Role;
  content: string;
  citations?: Citation[];
  createdAt: Date;
}

export interface Conversation {
  id: string;
  userId: string;
  title: string;
  createdAt: Date;
  updatedAt: Date;
  messages: ChatMessage[];
}

export interface ConversationSummary {
  id: string;
  userId: string;
  title: string;
  createdAt: Date;
  updatedAt: Date;
  messageCount: number;
}

/** One entry of the history sent to the agent. */
export interface HistoryTurn {
  role: Role;
  content: string;
}

/** The first half of a UTF-16 surrogate pair. */
export const isHighSurrogate = (code: number): boolean => code >= 0xd800 && code <= 0xdbff;
/** The second half of a UTF-16 surrogate pair. */
export const isLowSurrogate = (code: number): boolean => code >= 0xdc00 && code <= 0xdfff;

/**
 * Characters as a reader counts them: Unicode code points, so an emoji is one character, not two.
 *
 * @example
 * characterCount('héllo 👋'); // 7
 */
export function characterCount(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    if (isHighSurrogate(text.charCodeAt(i)) && i + 1 < text.length && isLowSurrogate(text.charCodeAt(i + 1))) i++;
    count++;
  }
  return count;
}

/** The first `limit` code points of a text, never splitting a surrogate pair. */
function firstCharacters(text: string, limit: number): string {
  return Array.from(text).slice(0, limit).join('');
}

/** NUL cannot be stored (the store's PostgreSQL jsonb refuses it), so it is refused before anything runs. */
const NUL_PROBLEM = (field: string) => `${field}: NUL (\\u0000) cannot be stored`;

/**
 * Whether a text holds half of a surrogate pair on its own. The store encodes text as UTF-8, which
 * turns such a half into U+FFFD, so the text stored would not be the text sent.
 *
 * @example
 * hasUnpairedSurrogate('🔥'); // false
 * hasUnpairedSurrogate('\ud83d'); // true
 */
export function hasUnpairedSurrogate(text: string): boolean {
  return LONE_SURROGATE.test(text);
}

/** Why a text cannot be stored as it is, or undefined: NUL, or half of a surrogate pair. */
function unstorableProblem(field: string, text: string): string | undefined {
  if (text.includes('\u0000')) return NUL_PROBLEM(field);
  const half = LONE_SURROGATE.exec(text)?.[0];
  if (half !== undefined) return `${field}: an unpaired surrogate (\\u${half.charCodeAt(0).toString(16)}) cannot be stored`;
  return undefined;
}

/**
 * Why a message content is refused, or undefined when it is acceptable: 1 to 8000 characters, as the
 * seed says; whitespace counts, so a single space is a message. NUL and half a surrogate pair are
 * refused: neither can be stored as sent.
 */
export function contentProblem(content: string): string | undefined {
  const length = characterCount(content);
  if (length < 1 || length > MAX_MESSAGE_LENGTH) {
    return `content: expected 1 to ${MAX_MESSAGE_LENGTH} characters, got ${length}`;
  }
  return unstorableProblem('content', content);
}

/** Why a title is refused, or undefined: 1 to 120 characters once trimmed. */
export function titleProblem(title: string): string | undefined {
  const length = characterCount(title.trim());
  if (length < 1 || length > MAX_TITLE_LENGTH) {
    return `title: expected 1 to ${MAX_TITLE_LENGTH} characters, got ${length}`;
  }
  return unstorableProblem('title', title);
}

/**
 * The title a first question gives a conversation: whitespace runs folded to one space, trimmed, and at
 * most 120 characters, cut at the last word boundary that fits. A single word longer than the limit is
 * cut at the limit. A question of only whitespace gives no title (undefined): the conversation keeps
 * the one it has.
 *
 * @example
 * titleFromQuestion('  Why is  room 4\nso warm?  '); // 'Why is room 4 so warm?'
 * titleFromQuestion(' \n '); // undefined
 */
export function titleFromQuestion(question: string, limit = MAX_TITLE_LENGTH): string | undefined {
  const folded = question.replace(/\s+/gu, ' ').trim();
  if (folded === '') return undefined;
  if (characterCount(folded) <= limit) return folded;
  const head = firstCharacters(folded, limit);
  const rest = folded.slice(head.length);
  if (rest.startsWith(' ')) return head.trimEnd();
  const lastSpace = head.lastIndexOf(' ');
  if (lastSpace <= 0) return head;
  return head.slice(0, lastSpace).trimEnd();
}

/** Whether a send may start: the conversation must have room for both messages of the exchange. */
export function hasRoomForExchange(messageCount: number): boolean {
  return messageCount + MESSAGES_PER_EXCHANGE <= MAX_MESSAGES;
}

/**
 * The history sent to the agent: the last `max` messages, oldest first, as `{role, content}`.
 *
 * @example
 * historyOf(conversation.messages, 10);
 */
export function historyOf(messages: readonly HistoryTurn[], max: number): HistoryTurn[] {
  if (max <= 0) return [];
  return messages.slice(-max).map((m) => ({ role: m.role, content: m.content }));
}

/** Whether the title of a conversation should come from the question being sent now. */
export function seedsTitle(conversation: { title: string; messageCount: number }): boolean {
  return conversation.title === DEFAULT_TITLE && conversation.messageCount === 0;
}
