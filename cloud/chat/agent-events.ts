/**
 * Reads the agent's SSE answer: each `data:` line is JSON, `{"type":"token","text"}` zero or more
 * times, then `{"type":"final","citations":[…]}`; `{"type":"error","message"}` is a failure.
 */
import * as t from 'io-ts';
import { createParser, type EventSourceParser } from 'eventsource-parser';
import { decode } from '../../shared/kinds.js';
import type { Readable } from 'node:stream';
import { AgentReportedError, AgentStreamError, type AgentEvent, type FinalAnswer } from './agent.js';
import type { Citation } from './conversation.js';

const CitationCodec = t.type({
  chunk_id: t.string,
  document_id: t.string,
  source: t.string,
  section_path: t.array(t.string),
});

const TokenEvent = t.type({ type: t.literal('token'), text: t.string });
const FinalEvent = t.intersection([t.type({ type: t.literal('final') }), t.partial({ citations: t.array(CitationCodec) })]);
const ErrorEvent = t.intersection([t.type({ type: t.literal('error') }), t.partial({ message: t.string })]);

/** A single agent event line can never be this large; a bigger one is a broken stream. */
const MAX_EVENT_CHARS = 1024 * 1024;

/**
 * Turns one `data:` payload into an event. Returns undefined for an event type this service does not
 * know (a newer agent may add some); throws {@link AgentStreamError} `malformed` for anything broken.
 *
 * @example
 * agentEventOf('{"type":"token","text":"Hel"}'); // { type: 'token', text: 'Hel' }
 */
export function agentEventOf(data: string): AgentEvent | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    throw new AgentStreamError('malformed', 'agent sent an event that is not JSON');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new AgentStreamError('malformed', 'agent sent an event that is not a JSON object');
  }
  const type = (parsed as { type?: unknown }).type;
  if (type === 'token') {
    // The hot path, once per token: a direct check instead of a codec walk.
    const text = (parsed as { text?: unknown }).text;
    if (typeof text === 'string') return { type: 'token', text };
    const token = decode(TokenEvent, parsed);
    throw new AgentStreamError('malformed', `agent token event: ${token.ok ? 'text: expected a string' : token.errors.join('; ')}`);
  }
  if (type === 'final') {
    const final = decode(FinalEvent, parsed);
    if (!final.ok) throw new AgentStreamError('malformed', `agent final event: ${final.errors.join('; ')}`);
    const citations = (parsed as { citations?: Citation[] }).citations;
    // The validated input objects themselves, so extra keys the agent sent are kept as given.
    return citations === undefined ? { type: 'final' } : { type: 'final', citations };
  }
  if (type === 'error') {
    const error = decode(ErrorEvent, parsed);
    return { type: 'error', message: error.ok && error.value.message ? error.value.message : 'agent reported an error' };
  }
  return undefined;
}

const codeOf = (err: unknown): string | undefined => {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
};

/** What a failing answer body means for the stream. */
export function streamFailureOf(err: unknown): AgentStreamError {
  if (err instanceof AgentStreamError) return err;
  if (codeOf(err) === 'UND_ERR_BODY_TIMEOUT') return new AgentStreamError('timeout', 'agent stopped sending in the middle of the answer');
  return new AgentStreamError('interrupted', 'agent connection broke in the middle of the answer');
}

/**
 * Reads an SSE answer body to its final event, handing each token to `onToken` as soon as it is
 * parsed (no buffering, no per-token promise: this is the relay's hot path). Resolves with the final
 * event; rejects with {@link AgentReportedError} for the agent's error event, {@link AgentStreamError}
 * when the body breaks, stalls, is malformed or ends without a final event, or with whatever
 * `onToken` threw. The caller releases the body afterwards.
 */
export function readAgentAnswer(body: Readable, onToken: (text: string) => void): Promise<FinalAnswer> {
  return new Promise<FinalAnswer>((resolve, reject) => {
    let settled = false;
    const decoder = new TextDecoder();
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      body.off('data', onData);
      body.off('end', onEnd);
      body.off('error', onError);
      outcome();
    };
    const parser: EventSourceParser = createParser({
      maxBufferSize: MAX_EVENT_CHARS,
      onEvent: (message) => {
        if (settled) return;
        let event: AgentEvent | undefined;
        try {
          event = agentEventOf(message.data);
        } catch (err) {
          settle(() => reject(err));
          return;
        }
        if (event === undefined) return;
        if (event.type === 'token') {
          try {
            onToken(event.text);
          } catch (err) {
            settle(() => reject(err));
          }
          return;
        }
        if (event.type === 'final') {
          const final: FinalAnswer = event.citations === undefined ? {} : { citations: event.citations };
          settle(() => resolve(final));
          return;
        }
        const reported = new AgentReportedError(event.message);
        settle(() => reject(reported));
      },
      onError: (error) => {
        if (error.type === 'max-buffer-size-exceeded') settle(() => reject(new AgentStreamError('malformed', 'agent sent an oversized event')));
      },
    });
    const feed = (text: string) => {
      try {
        parser.feed(text);
      } catch {
        settle(() => reject(new AgentStreamError('malformed', 'agent sent an unreadable stream')));
      }
    };
    const onData = (chunk: Buffer | string) => feed(typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true }));
    const onEnd = () => {
      feed(decoder.decode());
      parser.reset({ consume: true });
      settle(() => reject(new AgentStreamError('incomplete', 'the agent ended the answer without its final event')));
    };
    const onError = (err: unknown) => settle(() => reject(streamFailureOf(err)));
    body.on('data', onData);
    body.on('end', onEnd);
    body.on('error', onError);
  });
}
