/**
 * The agent port: ask one question with its history, get the answer token by token.
 *
 * `ask` settles once the agent has answered with an SSE stream, or rejects with
 * {@link AgentUnavailableError} before any event (so the caller can still answer 502), or with
 * {@link AgentStoppedError} when the client was stopped first. Reading the
 * answer then resolves with its final event, or rejects with {@link AgentReportedError} (the agent's
 * own error event) or {@link AgentStreamError} (the stream broke).
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

/** What the agent's final event carries. */
export interface FinalAnswer {
  citations?: Citation[];
}

export interface AgentAnswer {
  /**
   * Reads the answer to its final event. `onToken` runs for each token the moment it is parsed, with
   * the token's text and that text as a JSON string literal (exactly what `JSON.stringify(text)` gives,
   * so a relay can frame it without serialising it again); if it throws, reading stops and the promise
   * rejects with that error. Call once.
   */
  read(onToken: (text: string, literal: string) => void): Promise<FinalAnswer>;
  /** Stops reading and releases the connection. Safe to call at any time, more than once. */
  cancel(): void;
}

export interface AgentPort {
  ask(question: AgentQuestion): Promise<AgentAnswer>;
}

/**
 * Why the agent could not be used before its stream began. `bad_response`: it answered, but not in HTTP
 * this client can read (a bad status line, header or Content-Length), so the agent is up but broken.
 */
export type UnavailableReason = 'unreachable' | 'timeout' | 'bad_status' | 'not_event_stream' | 'bad_response';

export class AgentUnavailableError extends Error {
  readonly reason: UnavailableReason;
  constructor(reason: UnavailableReason, message: string) {
    super(message);
    this.name = 'AgentUnavailableError';
    this.reason = reason;
  }
}

/**
 * The client was stopped (the service is stopping) before the agent answered. The agent did nothing
 * wrong: the caller is told the service is stopping, and no agent error is counted.
 */
export class AgentStoppedError extends Error {
  constructor() {
    super('the agent client was stopped before the agent answered');
    this.name = 'AgentStoppedError';
  }
}

/** The agent sent its own error event. Its message is the agent's, kept for logs. */
export class AgentReportedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AgentReportedError';
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
