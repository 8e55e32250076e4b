/**
 * The agent adapter over HTTP: POST {AGENT_URL}/ask, answered with SSE.
 *
 * The answer is read chunk by chunk as the wire client (agent-wire.ts) de-frames it, without a body
 * stream in between: every token of every answer passes here, so each layer skipped is CPU the
 * service's event loop has for new requests. Connections are kept alive and reused: an answer that
 * ended with its final event leaves its connection to the pool, so the next question does not wait
 * for a new TCP connection.
 */
import { performance } from 'node:perf_hooks';
import { CLAIMS_HEADER } from '../../shared/claims.js';
import { AnswerReader, streamFailureOf } from './agent-events.js';
import { AgentStoppedError, AgentStreamError, AgentUnavailableError, type AgentAnswer, type AgentPort, type AgentQuestion } from './agent.js';
import { AgentWire, AgentWireError, type ExchangeHandler } from './agent-wire.js';

export interface HttpAgentOptions {
  /** Base address of the agent; its /ask endpoint is called. */
  baseUrl: string;
  /** Time to open the TCP connection. */
  connectTimeoutMs: number;
  /** Time from sending the question to the agent's response headers. */
  responseTimeoutMs: number;
  /**
   * Longest silence allowed inside the answer: from the response headers to the first text, and
   * between two pieces of text. Keep-alive comments, empty tokens and unknown events do not count.
   */
  idleTimeoutMs: number;
}

export const DEFAULT_AGENT_TIMEOUTS = { connectTimeoutMs: 3_000, responseTimeoutMs: 30_000, idleTimeoutMs: 60_000 } as const;

/**
 * After the final event, how long the agent has to end its response before the connection is cut
 * (an agent that keeps the response open after its answer must not hold a pooled connection).
 */
const END_AFTER_FINAL_MS = 2_000;

function unavailable(err: unknown): AgentUnavailableError {
  const code = err instanceof AgentWireError ? err.code : undefined;
  if (code === 'connect_timeout') return new AgentUnavailableError('timeout', 'agent did not accept the connection in time');
  if (code === 'headers_timeout') return new AgentUnavailableError('timeout', 'agent did not answer in time');
  // The agent is up and answered: reporting it unreachable would send the reader to the network.
  if (code === 'malformed') return new AgentUnavailableError('bad_response', 'agent answered with a malformed HTTP response');
  return new AgentUnavailableError('unreachable', 'agent is unreachable');
}

/** Why an exchange failed before the response headers: this client stopping, or the agent unavailable. */
function failureBeforeHeaders(err: unknown): AgentStoppedError | AgentUnavailableError {
  if (err instanceof AgentWireError && err.code === 'stopped') return new AgentStoppedError();
  return unavailable(err);
}

/** The value of one response header from the raw `[name, value, …]` list (names lowercased). */
function headerOf(rawHeaders: readonly string[], name: string): string | undefined {
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    if (rawHeaders[i] === name) return rawHeaders[i + 1];
  }
  return undefined;
}

class AskCancelled extends Error {
  constructor() {
    super('the answer is no longer needed');
    this.name = 'AskCancelled';
  }
}

/**
 * One call to /ask as the wire client's exchange handler. `answered` settles at the response headers: with an
 * {@link AgentAnswer} for a 200 event stream, or an {@link AgentUnavailableError} (an
 * {@link AgentStoppedError} once the client is stopped). Chunks of the body
 * then go straight to the {@link AnswerReader}.
 */
class AskHandler implements ExchangeHandler {
  readonly answered: Promise<AgentAnswer>;
  private resolveAnswered!: (answer: AgentAnswer) => void;
  private rejectAnswered!: (err: unknown) => void;
  private readonly reader = new AnswerReader();
  private abort: ((err?: Error) => void) | undefined;
  private headersSeen = false;
  private finished = false;
  private cancelled = false;
  private endTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly idleTimeoutMs: number;
  /** When the answer last moved: its headers, then each token with text. */
  private progressAt = 0;
  private idleTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(idleTimeoutMs: number) {
    this.idleTimeoutMs = idleTimeoutMs;
    this.answered = new Promise<AgentAnswer>((resolve, reject) => {
      this.resolveAnswered = resolve;
      this.rejectAnswered = reject;
    });
  }

  onConnect(abort: (err?: Error) => void): void {
    this.abort = abort;
    if (this.cancelled) abort(new AskCancelled());
  }

  onHeaders(statusCode: number, rawHeaders: string[]): void {
    this.headersSeen = true;
    const contentType = headerOf(rawHeaders, 'content-type') ?? '';
    if (statusCode !== 200 || !contentType.toLowerCase().startsWith('text/event-stream')) {
      this.rejectAnswered(
        statusCode !== 200
          ? new AgentUnavailableError('bad_status', `agent answered ${statusCode}`)
          : new AgentUnavailableError('not_event_stream', 'agent did not answer with an event stream'),
      );
      this.cut();
      return;
    }
    this.progressAt = performance.now();
    this.idleTimer = setTimeout(this.checkIdle, this.idleTimeoutMs);
    this.resolveAnswered({
      read: (onToken) =>
        this.reader.start((text, literal) => {
          if (text.length > 0) this.progressAt = performance.now();
          onToken(text, literal);
        }),
      cancel: () => this.cancel(),
    });
  }

  onData(chunk: Buffer): void {
    this.reader.chunk(chunk);
  }

  onComplete(): void {
    this.finished = true;
    this.clearTimers();
    this.reader.end();
  }

  onError(err: Error): void {
    this.finished = true;
    this.clearTimers();
    if (!this.headersSeen) {
      this.rejectAnswered(failureBeforeHeaders(err));
      return;
    }
    this.reader.fail(streamFailureOf(err));
  }

  /**
   * The answer is no longer read. Once its final event arrived, the response is let to end by itself,
   * so its connection returns to the pool; otherwise the request is aborted.
   */
  private cancel(): void {
    if (this.finished) return;
    if (this.idleTimer !== undefined) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    if (this.reader.final) {
      this.awaitEnd();
      return;
    }
    this.reader.fail(new AskCancelled());
    this.cut();
  }

  private awaitEnd(): void {
    if (this.finished || this.endTimer !== undefined) return;
    this.endTimer = setTimeout(() => this.cut(), END_AFTER_FINAL_MS);
    this.endTimer.unref();
  }

  private cut(): void {
    this.clearTimers();
    if (this.finished) return;
    this.cancelled = true;
    this.abort?.(new AskCancelled());
  }

  /**
   * The body timeout only sees bytes, so an agent sending keep-alive comments (or empty tokens, or
   * events this service skips) would hold the answer open for good. This one sees the answer: past
   * the idle timeout without text, the answer fails as a stalled one does.
   */
  private readonly checkIdle = (): void => {
    this.idleTimer = undefined;
    if (this.finished || this.reader.settled) return;
    const quietMs = performance.now() - this.progressAt;
    if (quietMs < this.idleTimeoutMs) {
      this.idleTimer = setTimeout(this.checkIdle, this.idleTimeoutMs - quietMs);
      return;
    }
    this.reader.fail(new AgentStreamError('timeout', 'agent stopped sending in the middle of the answer'));
    this.cut();
  };

  private clearTimers(): void {
    if (this.endTimer !== undefined) clearTimeout(this.endTimer);
    this.endTimer = undefined;
    if (this.idleTimer !== undefined) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
  }
}

export class HttpAgent implements AgentPort {
  private readonly path: string;
  private readonly wire: AgentWire;
  private readonly idleTimeoutMs: number;

  constructor(options: HttpAgentOptions) {
    this.idleTimeoutMs = options.idleTimeoutMs;
    const askUrl = new URL(`${options.baseUrl.replace(/\/+$/, '')}/ask`);
    this.path = `${askUrl.pathname}${askUrl.search}`;
    this.wire = new AgentWire({ origin: new URL(askUrl.origin), connectTimeoutMs: options.connectTimeoutMs, headersTimeoutMs: options.responseTimeoutMs });
  }

  ask(question: AgentQuestion): Promise<AgentAnswer> {
    const handler = new AskHandler(this.idleTimeoutMs);
    this.wire.dispatch(
      {
        path: this.path,
        headers: [
          ['content-type', 'application/json'],
          ['accept', 'text/event-stream'],
          [CLAIMS_HEADER, question.claimsHeader],
        ],
        body: JSON.stringify({ question: question.question, history: question.history, stream: true }),
      },
      handler,
    );
    return handler.answered;
  }

  /** Closes every connection to the agent, aborting streams still open. */
  async stop(): Promise<void> {
    this.wire.stop();
  }
}
