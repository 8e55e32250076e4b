/**
 * The agent adapter over HTTP with undici: POST {AGENT_URL}/ask, answered with SSE.
 *
 * The answer is read through undici's dispatcher handler, chunk by chunk as its HTTP parser produces
 * them, without a body stream in between: every token of every answer passes here, so each layer
 * skipped is CPU the service's event loop has for new requests. Connections are kept alive and reused:
 * an answer that ended with its final event leaves its connection to the pool, so the next question
 * does not wait for a new TCP connection.
 */
import { Agent, type Dispatcher } from 'undici';
import { CLAIMS_HEADER } from '../../shared/claims.js';
import { AnswerReader, streamFailureOf } from './agent-events.js';
import { AgentUnavailableError, type AgentAnswer, type AgentPort, type AgentQuestion } from './agent.js';

export interface HttpAgentOptions {
  /** Base address of the agent; its /ask endpoint is called. */
  baseUrl: string;
  /** Time to open the TCP connection. */
  connectTimeoutMs: number;
  /** Time from sending the question to the agent's response headers. */
  responseTimeoutMs: number;
  /** Longest silence allowed between two chunks of the answer. */
  idleTimeoutMs: number;
}

export const DEFAULT_AGENT_TIMEOUTS = { connectTimeoutMs: 3_000, responseTimeoutMs: 30_000, idleTimeoutMs: 60_000 } as const;

/**
 * After the final event, how long the agent has to end its response before the connection is cut
 * (an agent that keeps the response open after its answer must not hold a pooled connection).
 */
const END_AFTER_FINAL_MS = 2_000;

const codeOf = (err: unknown): string | undefined => {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
};

function unavailable(err: unknown): AgentUnavailableError {
  const code = codeOf(err);
  if (code === 'UND_ERR_CONNECT_TIMEOUT') return new AgentUnavailableError('timeout', 'agent did not accept the connection in time');
  if (code === 'UND_ERR_HEADERS_TIMEOUT') return new AgentUnavailableError('timeout', 'agent did not answer in time');
  return new AgentUnavailableError('unreachable', 'agent is unreachable');
}

/** The value of one response header from undici's raw `[name, value, …]` list. */
function headerOf(rawHeaders: Buffer[] | string[] | null, name: string): string | undefined {
  if (!rawHeaders) return undefined;
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    if (String(rawHeaders[i]).toLowerCase() === name) return String(rawHeaders[i + 1]);
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
 * One call to /ask as an undici dispatch handler. `answered` settles at the response headers: with an
 * {@link AgentAnswer} for a 200 event stream, or an {@link AgentUnavailableError}. Chunks of the body
 * then go straight to the {@link AnswerReader}.
 */
class AskHandler implements Dispatcher.DispatchHandlers {
  readonly answered: Promise<AgentAnswer>;
  private resolveAnswered!: (answer: AgentAnswer) => void;
  private rejectAnswered!: (err: unknown) => void;
  private readonly reader = new AnswerReader();
  private abort: ((err?: Error) => void) | undefined;
  private headersSeen = false;
  private finished = false;
  private cancelled = false;
  private endTimer: ReturnType<typeof setTimeout> | undefined;

  constructor() {
    this.answered = new Promise<AgentAnswer>((resolve, reject) => {
      this.resolveAnswered = resolve;
      this.rejectAnswered = reject;
    });
  }

  onConnect(abort: (err?: Error) => void): void {
    this.abort = abort;
    if (this.cancelled) abort(new AskCancelled());
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[] | string[] | null): boolean {
    if (statusCode < 200) return true;
    this.headersSeen = true;
    const contentType = headerOf(rawHeaders, 'content-type') ?? '';
    if (statusCode !== 200 || !contentType.toLowerCase().startsWith('text/event-stream')) {
      this.rejectAnswered(
        statusCode !== 200
          ? new AgentUnavailableError('bad_status', `agent answered ${statusCode}`)
          : new AgentUnavailableError('not_event_stream', 'agent did not answer with an event stream'),
      );
      this.cut();
      return false;
    }
    this.resolveAnswered({
      read: (onToken) => this.reader.start(onToken),
      cancel: () => this.cancel(),
    });
    return true;
  }

  onData(chunk: Buffer): boolean {
    this.reader.chunk(chunk);
    return true;
  }

  onComplete(): void {
    this.finished = true;
    this.clearEndTimer();
    this.reader.end();
  }

  onError(err: Error): void {
    this.finished = true;
    this.clearEndTimer();
    if (!this.headersSeen) {
      this.rejectAnswered(unavailable(err));
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
    this.clearEndTimer();
    if (this.finished) return;
    this.cancelled = true;
    this.abort?.(new AskCancelled());
  }

  private clearEndTimer(): void {
    if (this.endTimer !== undefined) clearTimeout(this.endTimer);
    this.endTimer = undefined;
  }
}

export class HttpAgent implements AgentPort {
  private readonly origin: string;
  private readonly path: string;
  private readonly dispatcher: Agent;

  constructor(options: HttpAgentOptions) {
    const askUrl = new URL(`${options.baseUrl.replace(/\/+$/, '')}/ask`);
    this.origin = askUrl.origin;
    this.path = `${askUrl.pathname}${askUrl.search}`;
    this.dispatcher = new Agent({
      connect: { timeout: options.connectTimeoutMs },
      headersTimeout: options.responseTimeoutMs,
      bodyTimeout: options.idleTimeoutMs,
    });
  }

  ask(question: AgentQuestion): Promise<AgentAnswer> {
    const handler = new AskHandler();
    try {
      this.dispatcher.dispatch(
        {
          origin: this.origin,
          path: this.path,
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'text/event-stream',
            [CLAIMS_HEADER]: question.claimsHeader,
          },
          body: JSON.stringify({ question: question.question, history: question.history, stream: true }),
        },
        handler,
      );
    } catch (err) {
      return Promise.reject(unavailable(err));
    }
    return handler.answered;
  }

  /** Closes every connection to the agent, aborting streams still open. */
  async stop(): Promise<void> {
    await this.dispatcher.destroy();
  }
}
