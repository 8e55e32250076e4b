/**
 * Reads the agent's SSE answer: each `data:` line is JSON, `{"type":"token","text"}` zero or more
 * times, then `{"type":"final","citations":[…]}`; `{"type":"error","message"}` is a failure.
 */
import * as t from 'io-ts';
import { createParser, type EventSourceParser } from 'eventsource-parser';
import { decode } from '../../shared/kinds.js';
import { AgentStreamError, type AgentEvent } from './agent.js';
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

/**
 * Parses a byte stream of SSE into agent events, as they arrive. Iteration ends after the stream ends;
 * whether a final event came is the caller's judgement.
 */
export async function* agentEventsOf(chunks: AsyncIterable<Uint8Array | string>): AsyncGenerator<AgentEvent> {
  const ready: AgentEvent[] = [];
  let failure: AgentStreamError | undefined;
  const parser: EventSourceParser = createParser({
    maxBufferSize: MAX_EVENT_CHARS,
    onEvent: (message) => {
      if (failure) return;
      try {
        const event = agentEventOf(message.data);
        if (event) ready.push(event);
      } catch (err) {
        failure = err as AgentStreamError;
      }
    },
    onError: (error) => {
      if (error.type === 'max-buffer-size-exceeded') failure ??= new AgentStreamError('malformed', 'agent sent an oversized event');
    },
  });
  const decoder = new TextDecoder();
  for await (const chunk of chunks) {
    parser.feed(typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true }));
    while (ready.length > 0) yield ready.shift() as AgentEvent;
    if (failure) throw failure;
  }
  const tail = decoder.decode();
  if (tail) parser.feed(tail);
  parser.reset({ consume: true });
  while (ready.length > 0) yield ready.shift() as AgentEvent;
  if (failure) throw failure;
}
