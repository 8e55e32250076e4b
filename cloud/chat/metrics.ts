/**
 * The chat service's metrics. Every series exists from startup and reads 0 until its first event.
 */
import { Counter, Gauge, Histogram, zeroLabels, type Registry } from '../../shared/prom.js';

/** Why a stream ended with an error frame. */
export const STREAM_FAILURES = [
  'agent_error',
  'agent_timeout',
  'agent_interrupted',
  'agent_malformed',
  'agent_incomplete',
  'answer_invalid',
  'conversation_full',
  'conversation_gone',
  'store_failed',
] as const;
export type StreamFailureReason = (typeof STREAM_FAILURES)[number];

/** Why the agent could not be used, before or during a stream. */
export const AGENT_ERRORS = ['unreachable', 'timeout', 'bad_status', 'not_event_stream', 'bad_response', 'stream_error', 'stream_broken'] as const;
export type AgentErrorReason = (typeof AGENT_ERRORS)[number];

/** Why a send was refused before the agent was called. */
export const SEND_REJECTIONS = ['invalid', 'not_found', 'full'] as const;
export type SendRejection = (typeof SEND_REJECTIONS)[number];

export interface ChatMetrics {
  streamsStarted: Counter;
  streamsCompleted: Counter;
  streamsFailed: Counter<'reason'>;
  completedAfterDisconnect: Counter;
  clientDisconnects: Counter;
  activeStreams: Gauge;
  tokensRelayed: Counter;
  /** Counts one relayed token; added to `chat_tokens_relayed_total` when it is read. */
  tokenRelayed(): void;
  agentErrors: Counter<'reason'>;
  sendsRejected: Counter<'reason'>;
  timeToFirstToken: Histogram;
  /** The two waits before the first token: the conversation read, then the agent's response headers. */
  conversationReadSeconds: Histogram;
  agentResponseSeconds: Histogram;
  storeSeconds: Histogram;
}

/** Declares the chat metrics on a registry. */
export function createChatMetrics(registry: Registry): ChatMetrics {
  const registers = [registry];
  // Tokens are counted in a plain number (the relay's hot path) and moved to the counter when read.
  let relayedNotCollected = 0;
  const metrics: ChatMetrics = {
    streamsStarted: new Counter({ name: 'chat_streams_started_total', help: 'Answer streams opened to a browser', registers }),
    streamsCompleted: new Counter({ name: 'chat_streams_completed_total', help: 'Answer streams that stored the exchange and ended with done', registers }),
    streamsFailed: new Counter({ name: 'chat_streams_failed_total', help: 'Answer streams that ended with an error frame, by reason', labelNames: ['reason'], registers }),
    completedAfterDisconnect: new Counter({
      name: 'chat_streams_completed_after_disconnect_total',
      help: 'Exchanges stored although the browser left before the answer finished',
      registers,
    }),
    clientDisconnects: new Counter({ name: 'chat_client_disconnects_total', help: 'Browsers that left before their answer stream ended', registers }),
    activeStreams: new Gauge({ name: 'chat_active_streams', help: 'Answers being relayed now', registers }),
    tokensRelayed: new Counter({
      name: 'chat_tokens_relayed_total',
      help: 'Agent tokens relayed as token frames',
      registers,
      collect() {
        if (relayedNotCollected > 0) this.inc(relayedNotCollected);
        relayedNotCollected = 0;
      },
    }),
    tokenRelayed: () => {
      relayedNotCollected++;
    },
    agentErrors: new Counter({ name: 'chat_agent_errors_total', help: 'Agent calls that failed, by reason', labelNames: ['reason'], registers }),
    sendsRejected: new Counter({ name: 'chat_sends_rejected_total', help: 'Sends refused before the agent was called, by reason', labelNames: ['reason'], registers }),
    timeToFirstToken: new Histogram({
      name: 'chat_time_to_first_token_seconds',
      help: 'From the send request to the first token frame',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    conversationReadSeconds: new Histogram({
      name: 'chat_conversation_read_seconds',
      help: 'Reading the conversation (owner, message count, history) before the agent is called',
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    }),
    agentResponseSeconds: new Histogram({
      name: 'chat_agent_response_seconds',
      help: 'From calling the agent to its response headers, for calls it answered',
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    storeSeconds: new Histogram({
      name: 'chat_store_append_seconds',
      help: 'Time to store an exchange once the agent finished',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    }),
  };
  zeroLabels(metrics.streamsFailed, 'reason', STREAM_FAILURES);
  zeroLabels(metrics.agentErrors, 'reason', AGENT_ERRORS);
  zeroLabels(metrics.sendsRejected, 'reason', SEND_REJECTIONS);
  return metrics;
}
