/**
 * POST /conversations/{id}/messages: validate, ask the agent, relay its tokens as SSE, store the
 * exchange once the agent's final event arrives, then send `done`.
 *
 * Everything that can be refused is refused before the agent is called, as a JSON error. Once the
 * stream has begun, a failure is an `error` frame and nothing of the exchange is stored, except when
 * the store cannot tell whether its write landed: that frame then says to reload, not to send again.
 * A browser that leaves mid-stream does not stop the answer: it is read to the end and stored, so
 * reopening the conversation shows it.
 */
import type { ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { RequestHandler } from 'express';
import { ObjectId } from 'mongodb';
import type { Logger } from 'pino';
import type { Claims } from '../../shared/claims.js';
import { HttpError, describeError } from '../../shared/errors.js';
import { callerOf, rawClaimsOf } from '../../shared/http.js';
import { AgentReportedError, AgentStoppedError, AgentStreamError, AgentUnavailableError, type AgentAnswer, type AgentPort, type FinalAnswer } from './agent.js';
import { AgentStreamStoppedError } from './agent-events.js';
import {
  MAX_MESSAGE_LENGTH,
  MAX_MESSAGES,
  characterCount,
  hasRoomForExchange,
  hasUnpairedSurrogate,
  isHighSurrogate,
  isLowSurrogate,
  seedsTitle,
  titleFromQuestion,
  type ChatMessage,
  type Citation,
  type HistoryTurn,
} from './conversation.js';
import { LeaseLostError, LockAbandonedError } from './conversation-lock.js';
import { AppendUnconfirmedError } from './mongo-store.js';
import type { InFlight } from './in-flight.js';
import type { ChatMetrics, StreamFailureReason } from './metrics.js';
import { SseStream } from './sse.js';
import type { ConversationStore } from './store.js';
import { conversationIdOf, messageWire, sendBodyOf } from './wire.js';

export interface SendMessageDeps {
  store: ConversationStore;
  agent: AgentPort;
  metrics: ChatMetrics;
  logger: Logger;
  inFlight: InFlight;
  /** Messages of history sent to the agent (HISTORY_MAX_MESSAGES). */
  historyMaxMessages: number;
  heartbeatMs: number;
  now: () => Date;
}

export const CONVERSATION_NOT_FOUND = 'conversation not found';

/** The answer to a request the stopping service will not serve. */
export const STOPPING = 'the service is stopping; send the request again';

/** A message id: a fresh ObjectId as 24 hex characters. */
const newMessageId = () => new ObjectId().toHexString();

/** Tokens of an answer joined into one string at a time while it streams. */
const TOKENS_PER_PIECE = 16;

class StreamFailed extends Error {
  readonly reason: StreamFailureReason;
  constructor(reason: StreamFailureReason, message: string) {
    super(message);
    this.reason = reason;
  }
}

const STREAM_FAILURE_OF: Record<AgentStreamError['reason'], StreamFailureReason> = {
  timeout: 'agent_timeout',
  interrupted: 'agent_interrupted',
  malformed: 'agent_malformed',
  incomplete: 'agent_incomplete',
};

interface Send {
  conversationId: string;
  userId: string;
  content: string;
  history: HistoryTurn[];
  seededTitle: string | undefined;
  receivedAt: Date;
  startedAt: number;
}

/** A send as the HTTP layer hands it over: the route's id, the parsed JSON body and the caller. */
export interface SendRequest {
  /** The `{id}` of the path, percent-decoded. */
  id: string | undefined;
  /** The request body as parsed JSON (undefined without one). */
  body: unknown;
  /** The decoded claims. */
  caller: Claims;
  /** The claims header as received, forwarded to the agent verbatim. */
  rawClaims: string;
}

/**
 * Runs one send to its end. It rejects with {@link HttpError} (or anything else, a 500) only before
 * the stream begins, when nothing was written to `res`; once it has begun, a failure is an `error`
 * frame. The send is tracked in `inFlight` until it ends.
 */
export type SendMessage = (request: SendRequest, res: ServerResponse) => Promise<void>;

export function sendMessageHandler(deps: SendMessageDeps): SendMessage {
  const { store, agent, metrics } = deps;

  const prepare = async (req: SendRequest): Promise<Send> => {
    const startedAt = performance.now();
    const receivedAt = deps.now();
    const userId = req.caller.sub;
    const conversationId = conversationIdOf(req.id);
    if (!conversationId) {
      metrics.sendsRejected.inc({ reason: 'not_found' });
      throw new HttpError(404, CONVERSATION_NOT_FOUND);
    }
    let content: string;
    try {
      content = sendBodyOf(req.body).content;
    } catch (err) {
      metrics.sendsRejected.inc({ reason: 'invalid' });
      throw err;
    }
    const readTimer = metrics.conversationReadSeconds.startTimer();
    const conversation = await store.sendContext(conversationId, userId, deps.historyMaxMessages).finally(readTimer);
    if (!conversation) {
      metrics.sendsRejected.inc({ reason: 'not_found' });
      throw new HttpError(404, CONVERSATION_NOT_FOUND);
    }
    if (!hasRoomForExchange(conversation.messageCount)) {
      metrics.sendsRejected.inc({ reason: 'full' });
      throw new HttpError(409, `conversation is full: it holds ${conversation.messageCount} of ${MAX_MESSAGES} messages and a send adds 2`);
    }
    return {
      conversationId,
      userId,
      content,
      history: conversation.recent,
      seededTitle: seedsTitle(conversation) ? titleFromQuestion(content) : undefined,
      receivedAt,
      startedAt,
    };
  };

  const storeExchange = async (send: Send, answerText: string, citations: Citation[] | undefined): Promise<ChatMessage> => {
    const at = deps.now();
    const question: ChatMessage = { id: newMessageId(), role: 'user', content: send.content, createdAt: send.receivedAt };
    const answer: ChatMessage = { id: newMessageId(), role: 'assistant', content: answerText, createdAt: at };
    if (citations !== undefined) answer.citations = citations;
    const exchange = send.seededTitle === undefined ? { question, answer, at } : { question, answer, at, seededTitle: send.seededTitle };
    const stopTimer = metrics.storeSeconds.startTimer();
    let outcome;
    try {
      outcome = await store.appendExchange(send.conversationId, send.userId, exchange);
    } catch (err) {
      if (err instanceof LockAbandonedError) {
        throw new StreamFailed('store_failed', 'the service is stopping and the answer was not stored; please send the question again');
      }
      deps.logger.error({ conversationId: send.conversationId, error: describeError(err) }, 'storing an exchange failed');
      // The append may have landed, raced by another writer's: not done, and no blind resend either.
      if (err instanceof LeaseLostError) {
        throw new StreamFailed('store_failed', 'another writer took the conversation over while the answer was being stored; reload the conversation to see whether it was kept');
      }
      // The append may have landed, its reply lost with the connection: a resend could store it twice.
      if (err instanceof AppendUnconfirmedError) {
        throw new StreamFailed('store_failed', 'the connection to the database broke while the answer was being stored; reload the conversation to see whether it was kept');
      }
      // Nothing landed (no lock in time, or an update the store found had not landed): a resend stores it once.
      throw new StreamFailed('store_failed', 'the answer could not be stored; please send the question again');
    } finally {
      stopTimer();
    }
    if (outcome === 'full') throw new StreamFailed('conversation_full', `the conversation reached ${MAX_MESSAGES} messages while the answer was streaming`);
    if (outcome === 'missing') throw new StreamFailed('conversation_gone', 'the conversation was deleted while the answer was streaming');
    return answer;
  };

  const relay = async (send: Send, answer: AgentAnswer, stream: SseStream): Promise<void> => {
    // The answer so far, in joined pieces of TOKENS_PER_PIECE tokens: a token string then lives for
    // a fraction of a second instead of the whole answer, so it dies young instead of being promoted.
    let text = '';
    const piece: string[] = [];
    let length = 0;
    // Whether the answer so far ends on the first half of a surrogate pair, which the next token may complete.
    let endsOnHighSurrogate = false;
    let firstToken = true;
    let final: FinalAnswer;
    try {
      final = await answer.read((token, literal) => {
        // An empty token is silence, like a keep-alive comment: relayed, an agent sending nothing but
        // empty tokens would have the service queue a frame per token for a slow browser, without
        // limit, since they add nothing to the answer's length cap.
        if (token.length === 0) return;
        length += characterCount(token);
        // A pair split over two tokens is one character, but each token counted its half as one.
        if (endsOnHighSurrogate && isLowSurrogate(token.charCodeAt(0))) length--;
        endsOnHighSurrogate = isHighSurrogate(token.charCodeAt(token.length - 1));
        if (length > MAX_MESSAGE_LENGTH) {
          throw new StreamFailed('answer_invalid', `the answer is longer than ${MAX_MESSAGE_LENGTH} characters and cannot be stored`);
        }
        if (token.includes('\u0000')) throw new StreamFailed('answer_invalid', 'the answer holds a NUL character (\\u0000) and cannot be stored');
        piece.push(token);
        if (piece.length === TOKENS_PER_PIECE) {
          text += piece.join('');
          piece.length = 0;
        }
        stream.sendToken(literal);
        metrics.tokenRelayed();
        if (firstToken) {
          firstToken = false;
          metrics.timeToFirstToken.observe((performance.now() - send.startedAt) / 1000);
        }
      });
    } catch (err) {
      if (!(err instanceof AgentReportedError)) throw err;
      metrics.agentErrors.inc({ reason: 'stream_error' });
      deps.logger.warn({ conversationId: send.conversationId, agentMessage: err.message.slice(0, 200) }, 'agent reported an error');
      throw new StreamFailed('agent_error', 'the agent could not answer this question');
    }
    answer.cancel();
    if (length === 0) throw new StreamFailed('answer_invalid', 'the agent returned an empty answer');
    const answerText = text + piece.join('');
    // Checked on the whole answer: a token may end on the first half of a pair the next one completes.
    if (hasUnpairedSurrogate(answerText)) throw new StreamFailed('answer_invalid', 'the answer holds half a surrogate pair and cannot be stored');
    const saved = await storeExchange(send, answerText, final.citations);
    stream.send({ type: 'done', message: messageWire(saved) });
  };

  const run = async (req: SendRequest, res: ServerResponse): Promise<void> => {
    const send = await prepare(req);
    const stream = new SseStream(res, deps.heartbeatMs, () => metrics.clientDisconnects.inc());
    stream.watch();
    let answer: AgentAnswer;
    try {
      const answered = metrics.agentResponseSeconds.startTimer();
      answer = await agent.ask({ question: send.content, history: send.history, claimsHeader: req.rawClaims });
      answered();
    } catch (err) {
      if (err instanceof AgentUnavailableError) {
        metrics.agentErrors.inc({ reason: err.reason });
        throw new HttpError(502, err.message);
      }
      // The stopping service closed its agent client before the agent answered: nothing is wrong
      // with the agent, so this is the stopping refusal a rename or a delete gets, not a 502.
      if (err instanceof AgentStoppedError) throw new HttpError(503, STOPPING);
      throw err;
    }

    stream.open();
    metrics.streamsStarted.inc();
    metrics.activeStreams.inc();
    try {
      await relay(send, answer, stream);
      metrics.streamsCompleted.inc();
      if (stream.disconnected) metrics.completedAfterDisconnect.inc();
    } catch (err) {
      const failure = failureOf(err, metrics);
      metrics.streamsFailed.inc({ reason: failure.reason });
      const cause = err instanceof AgentStreamStoppedError ? 'answer stream cut: the service is stopping' : 'answer stream failed';
      deps.logger.info({ conversationId: send.conversationId, reason: failure.reason }, cause);
      stream.send({ type: 'error', error: failure.reason, message: failure.message });
    } finally {
      answer.cancel();
      stream.end();
      metrics.activeStreams.dec();
    }
  };

  return (req, res) => deps.inFlight.track(run(req, res));
}

/** The send as an Express route (`/:id/messages` behind requireClaims and jsonBody). */
export function sendMessageRoute(send: SendMessage): RequestHandler {
  return (req, res) => {
    const id = req.params.id;
    return send({ id: typeof id === 'string' ? id : undefined, body: req.body as unknown, caller: callerOf(res), rawClaims: rawClaimsOf(req) }, res);
  };
}

function failureOf(err: unknown, metrics: ChatMetrics): StreamFailed {
  if (err instanceof StreamFailed) return err;
  // The stopping service cut the answer, not the agent: the same frame, but no agent error counted.
  if (err instanceof AgentStreamStoppedError) return new StreamFailed(STREAM_FAILURE_OF[err.reason], err.message);
  if (err instanceof AgentStreamError) {
    metrics.agentErrors.inc({ reason: 'stream_broken' });
    return new StreamFailed(STREAM_FAILURE_OF[err.reason], err.message);
  }
  return new StreamFailed('store_failed', 'the answer could not be completed');
}
