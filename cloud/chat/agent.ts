/**
 * The agent port: ask one question with its history, get the answer as a stream of events.
 *
 * `ask` settles once the agent has answered with an SSE stream, or rejects with
 * {@link AgentUnavailableError} before any event (so the caller can still answer 502). Failures while
 * the events flow surface as {@link AgentStreamError} from the iterator.
 */
import type { Citation, HistoryTurn } from './conversation.js';

export type AgentEvent =
  | { type: 'token'; text: string }
  | { type: 'final'; citations?: Citation[] }
  | { type: 'error'; message: string };

export interface AgentQuestion {
  question: string;
  history: HistoryTurn[];
  /** The caller's x-gateway-claims header, forwarded verbatim. */
  claimsHeader: string;
}

export interface AgentAnswer {
  events: AsyncIterable<AgentEvent>;
  /** Stops reading and releases the connection. Safe to call at any time, more than once. */
  cancel(): void;
}

export interface AgentPort {
  ask(question: AgentQuestion): Promise<AgentAnswer>;
}

/** Why the agent could not be used before its stream began. */
export type UnavailableReason = 'unreachable' | 'timeout' | 'bad_status' | 'not_event_stream';

export class AgentUnavailableError extends Error {
  readonly reason: UnavailableReason;
  constructor(reason: UnavailableReason, message: string) {
    super(message);
    this.name = 'AgentUnavailableError';
    this.reason = reason;
  }
}

/** Why an answer stream broke after it began. */
export type StreamFailure = 'timeout' | 'interrupted' | 'malformed' | 'incomplete';

export class AgentStreamError extends Error {
  readonly reason: StreamFailure;
  constructor(reason: StreamFailure, message: string) {
    super(message);
    this.name = 'AgentStreamError';
    this.reason = reason;
  }
}
