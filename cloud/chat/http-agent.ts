/**
 * The agent adapter over HTTP with undici: POST {AGENT_URL}/ask, answered with SSE.
 */
import { Agent, request } from 'undici';
import { CLAIMS_HEADER } from '../../shared/claims.js';
import { readAgentAnswer } from './agent-events.js';
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

export class HttpAgent implements AgentPort {
  private readonly askUrl: string;
  private readonly dispatcher: Agent;

  constructor(options: HttpAgentOptions) {
    this.askUrl = `${options.baseUrl.replace(/\/+$/, '')}/ask`;
    this.dispatcher = new Agent({
      connect: { timeout: options.connectTimeoutMs },
      headersTimeout: options.responseTimeoutMs,
      bodyTimeout: options.idleTimeoutMs,
    });
  }

  async ask(question: AgentQuestion): Promise<AgentAnswer> {
    let response: Awaited<ReturnType<typeof request>>;
    try {
      response = await request(this.askUrl, {
        dispatcher: this.dispatcher,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'text/event-stream',
          [CLAIMS_HEADER]: question.claimsHeader,
        },
        body: JSON.stringify({ question: question.question, history: question.history, stream: true }),
      });
    } catch (err) {
      throw unavailable(err);
    }
    const { statusCode, headers, body } = response;
    // Destroying an unfinished body emits an abort error; reads report failures through the iterator.
    body.on('error', () => undefined);
    const contentType = String(headers['content-type'] ?? '');
    if (statusCode !== 200 || !contentType.toLowerCase().startsWith('text/event-stream')) {
      body.destroy();
      if (statusCode !== 200) throw new AgentUnavailableError('bad_status', `agent answered ${statusCode}`);
      throw new AgentUnavailableError('not_event_stream', 'agent did not answer with an event stream');
    }
    return {
      read: (onToken) => readAgentAnswer(body, onToken),
      cancel: () => {
        if (!body.destroyed) body.destroy();
      },
    };
  }

  /** Closes every connection to the agent, aborting streams still open. */
  async stop(): Promise<void> {
    await this.dispatcher.destroy();
  }
}
