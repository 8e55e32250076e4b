/**
 * The agent adapter over HTTP with undici: POST {AGENT_URL}/ask, answered with SSE.
 *
 * The answer is read through undici's dispatcher handler, chunk by chunk as its HTTP parser produces
 * them, without a body stream in between: every token of every answer passes here, so each layer
 * skipped is CPU the service's event loop has for new requests. Connections are kept alive and reused:
 * an answer that ended with its final event leaves its connection to the pool, so the next question
 * does not wait for a new TCP connection.
 */
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Agent, buildConnector, type Dispatcher } from 'undici';
import { CLAIMS_HEADER } from '../../shared/claims.js';
import { AnswerReader, streamFailureOf } from './agent-events.js';
import { AgentStreamError, AgentUnavailableError, type AgentAnswer, type AgentPort, type AgentQuestion } from './agent.js';

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

/** How long a connection opened ahead of need waits to be taken before it is closed. */
const SPARE_IDLE_MS = 1_000;

/**
 * Opens connections to the agent one ahead of need. undici asks for a new connection when every pooled
 * one is busy, as in a burst of new conversations; this hands it the one opened at the previous such
 * request, already connected, and opens the next in the background. A question arriving in a burst then
 * does not wait for a TCP handshake on the service's busy event loop. A spare nobody takes within
 * {@link SPARE_IDLE_MS} is closed, so a steady pool holds no extra connection.
 */
class AheadConnector {
  private readonly base: buildConnector.connector;
  private spare: { key: string; socket: Socket; timer: ReturnType<typeof setTimeout>; forget: () => void } | undefined;
  private opening = false;
  private stopped = false;

  constructor(connectTimeoutMs: number) {
    this.base = buildConnector({ timeout: connectTimeoutMs });
  }

  readonly connect = (options: buildConnector.Options, callback: buildConnector.Callback): void => {
    const key = `${options.protocol}//${options.hostname}:${options.port}`;
    const spare = this.take(key);
    this.openSpare(options, key);
    if (spare) callback(null, spare);
    else this.base(options, callback);
  };

  /** Closes the spare connection and opens no more. */
  stop(): void {
    this.stopped = true;
    this.drop()?.destroy();
  }

  private take(key: string): Socket | undefined {
    if (this.spare?.key !== key) return undefined;
    const socket = this.drop();
    // Only a connection still open both ways and silent is as good as a new one.
    if (!socket || socket.destroyed || socket.readyState !== 'open' || socket.readableEnded) {
      socket?.destroy();
      return undefined;
    }
    return socket;
  }

  private drop(): Socket | undefined {
    const spare = this.spare;
    if (!spare) return undefined;
    this.spare = undefined;
    clearTimeout(spare.timer);
    spare.forget();
    return spare.socket;
  }

  private openSpare(options: buildConnector.Options, key: string): void {
    if (this.stopped || this.opening || this.spare) return;
    this.opening = true;
    this.base(options, (err, socket) => {
      this.opening = false;
      if (err || !socket) return;
      if (this.stopped || this.spare) {
        socket.destroy();
        return;
      }
      const gone = () => {
        if (this.spare?.socket === socket) this.drop();
        socket.destroy();
      };
      // Read while idle, so the agent closing it (or sending anything unasked) is seen at once; an idle
      // spare reset by the agent only loses the spare.
      const ignore = () => undefined;
      socket.on('data', gone);
      socket.on('end', gone);
      socket.on('close', gone);
      socket.on('error', ignore);
      const timer = setTimeout(() => this.drop()?.destroy(), SPARE_IDLE_MS);
      timer.unref();
      const forget = () => {
        socket.off('data', gone);
        socket.off('end', gone);
        socket.off('close', gone);
        socket.off('error', ignore);
        socket.pause();
      };
      this.spare = { key, socket, timer, forget };
    });
  }
}

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
    return true;
  }

  onData(chunk: Buffer): boolean {
    this.reader.chunk(chunk);
    return true;
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
  private readonly origin: string;
  private readonly path: string;
  private readonly dispatcher: Agent;
  private readonly connector: AheadConnector;
  private readonly idleTimeoutMs: number;

  constructor(options: HttpAgentOptions) {
    this.idleTimeoutMs = options.idleTimeoutMs;
    const askUrl = new URL(`${options.baseUrl.replace(/\/+$/, '')}/ask`);
    this.origin = askUrl.origin;
    this.path = `${askUrl.pathname}${askUrl.search}`;
    this.connector = new AheadConnector(options.connectTimeoutMs);
    this.dispatcher = new Agent({
      connect: this.connector.connect,
      headersTimeout: options.responseTimeoutMs,
      bodyTimeout: options.idleTimeoutMs,
    });
  }

  ask(question: AgentQuestion): Promise<AgentAnswer> {
    const handler = new AskHandler(this.idleTimeoutMs);
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
    this.connector.stop();
    await this.dispatcher.destroy();
  }
}
