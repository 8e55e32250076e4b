/**
 * The chat wire format (CONTRACTS.md, Chat): request bodies in, camelCase JSON out. Citations keep the
 * agent's snake_case names and travel exactly as stored.
 */
import { HttpError, reportedProblems, unknownKeyProblems } from '../../shared/errors.js';
import { describeValue } from '../../shared/kinds.js';
import { contentProblem, titleProblem, type ChatMessage, type Conversation, type ConversationSummary } from './conversation.js';
import type { ListQuery } from './store.js';

/** An id is a 24-hex ObjectId string; anything else can match nothing. Lower-cased for lookups. */
export function conversationIdOf(raw: unknown): string | undefined {
  return typeof raw === 'string' && /^[0-9a-fA-F]{24}$/.test(raw) ? raw.toLowerCase() : undefined;
}

function objectBody(body: unknown, allowed: readonly string[], optional: boolean): Record<string, unknown> {
  if (body === undefined && optional) return {};
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new HttpError(400, `body: expected a JSON object, got ${describeValue(body)}`);
  }
  const unknown = Object.keys(body).filter((key) => !allowed.includes(key));
  if (unknown.length > 0) {
    const described = unknownKeyProblems(unknown, (key) => `${key}: unknown field (expected ${allowed.join(', ')})`);
    throw new HttpError(400, reportedProblems(described.problems, described.notListed).join('; '));
  }
  return body as Record<string, unknown>;
}

function titleOf(value: unknown): string {
  if (typeof value !== 'string') throw new HttpError(400, `title: expected a string, got ${describeValue(value)}`);
  const problem = titleProblem(value);
  if (problem) throw new HttpError(400, problem);
  return value.trim();
}

/** Create body `{title?}`; an absent body is a conversation with the default title. */
export function createBodyOf(body: unknown): { title?: string } {
  const fields = objectBody(body, ['title'], true);
  return fields.title === undefined ? {} : { title: titleOf(fields.title) };
}

/** Rename body `{title}`, 1 to 120 characters once trimmed. */
export function renameBodyOf(body: unknown): { title: string } {
  const fields = objectBody(body, ['title'], false);
  if (fields.title === undefined) throw new HttpError(400, 'title: expected a string, got nothing');
  return { title: titleOf(fields.title) };
}

/** Send body `{content}`, 1 to 8000 characters, kept exactly as typed. */
export function sendBodyOf(body: unknown): { content: string } {
  const fields = objectBody(body, ['content'], false);
  if (typeof fields.content !== 'string') throw new HttpError(400, `content: expected a string, got ${describeValue(fields.content)}`);
  const problem = contentProblem(fields.content);
  if (problem) throw new HttpError(400, problem);
  return { content: fields.content };
}

/**
 * List query `?limit=&after=`, both optional: without `limit` the whole list, with it one page of at
 * most `limit` conversations.
 */
export function listQueryOf(query: Record<string, unknown>, maxLimit: number): ListQuery {
  const { limit: rawLimit, after } = query;
  const list: ListQuery = {};
  if (rawLimit !== undefined) {
    if (typeof rawLimit !== 'string' || !/^\d{1,4}$/.test(rawLimit) || Number(rawLimit) < 1 || Number(rawLimit) > maxLimit) {
      throw new HttpError(400, `limit: expected an integer from 1 to ${maxLimit}, got ${describeValue(rawLimit)}`);
    }
    list.limit = Number(rawLimit);
  }
  if (after === undefined) return list;
  if (typeof after !== 'string' || after === '') throw new HttpError(400, `after: expected a cursor, got ${describeValue(after)}`);
  list.after = after;
  return list;
}

export interface MessageWire {
  id: string;
  role: string;
  content: string;
  citations?: unknown[];
  createdAt: string;
}

export function messageWire(message: ChatMessage): MessageWire {
  const wire: MessageWire = { id: message.id, role: message.role, content: message.content, createdAt: message.createdAt.toISOString() };
  if (message.citations !== undefined) wire.citations = message.citations;
  return wire;
}

export function conversationWire(conversation: Conversation) {
  return {
    id: conversation.id,
    userId: conversation.userId,
    title: conversation.title,
    createdAt: conversation.createdAt.toISOString(),
    updatedAt: conversation.updatedAt.toISOString(),
    messages: conversation.messages.map(messageWire),
  };
}

export function summaryWire(summary: ConversationSummary) {
  return {
    id: summary.id,
    userId: summary.userId,
    title: summary.title,
    createdAt: summary.createdAt.toISOString(),
    updatedAt: summary.updatedAt.toISOString(),
    messageCount: summary.messageCount,
  };
}
