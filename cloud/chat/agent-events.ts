/**
 * Reads the agent's SSE answer: each `data:` line is JSON, `{"type":"token","text"}` zero or more
 * times, then `{"type":"final","citations":[…]}`; `{"type":"error","message"}` is a failure.
 *
 * This is the relay's hot path (one event per token, thousands a second across streams), so the event
 * stream is parsed here by a small reader instead of a general-purpose parser: it splits lines,
 * collects `data:` fields and hands each event's data to a callback, with no per-event object beyond
 * the strings themselves.
 */
import { isAscii } from 'node:buffer';
import { TextDecoder } from 'node:util';
import * as t from 'io-ts';
import { decode } from '../../shared/kinds.js';
import { AgentReportedError, AgentStreamError, type AgentEvent, type FinalAnswer } from './agent.js';
import { AgentWireError } from './agent-wire.js';
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

/** A single agent event can never be this large; a bigger one is a broken stream. */
export const MAX_EVENT_CHARS = 1024 * 1024;

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

/** How the agent's token events usually look, up to the text's literal and after it. */
const TOKEN_HEAD = '{"type":"token","text":';
const TOKEN_TAIL = '}';
/**
 * A JSON string literal that reads as exactly the characters between its quotes: no quote, no
 * backslash (so no escape) and none of the control characters JSON refuses.
 */
// eslint-disable-next-line no-control-regex
const VERBATIM_LITERAL = /^"[^"\\\u0000-\u001f]*"$/;

/**
 * The JSON string literal of a token event's text, read without parsing, when the event is exactly
 * `{"type":"token","text":"…"}` and the literal holds no escape, quote or control character: such a
 * literal is the text between quotes, and it is what `JSON.stringify` gives for that text (the text
 * came from decoded UTF-8, so it holds no half of a surrogate pair, the one other thing `JSON.stringify`
 * escapes). Undefined for every other event, which is then parsed. This runs once per token of every
 * answer.
 *
 * @example
 * verbatimTokenLiteral('{"type":"token","text":"Hel"}'); // '"Hel"'
 * verbatimTokenLiteral('{"type":"token","text":"a\\nb"}'); // undefined (an escape: parsed instead)
 */
export function verbatimTokenLiteral(data: string): string | undefined {
  if (!data.startsWith(TOKEN_HEAD) || !data.endsWith(TOKEN_TAIL)) return undefined;
  const literal = data.slice(TOKEN_HEAD.length, data.length - TOKEN_TAIL.length);
  return VERBATIM_LITERAL.test(literal) ? literal : undefined;
}

const LF = 10;

/**
 * Splits an event stream (the WHATWG `text/event-stream` rules) into the data of its events: lines end
 * at CRLF, LF or CR; `data` fields of one event are joined with LF; a blank line dispatches the event
 * when it has data; comments and the other fields (`event`, `id`, `retry`) carry nothing the answer
 * needs and are skipped. Throws {@link AgentStreamError} `malformed` when one event outgrows
 * {@link MAX_EVENT_CHARS}.
 */
export class EventDataReader {
  private readonly onData: (data: string) => void;
  /** Made for the first chunk that is not plain ASCII: most answers never need one. */
  private decoder: TextDecoder | undefined;
  /** Whether the decoder may hold the first bytes of a character split across chunks. */
  private decoderHolds = false;
  /** Whether bytes of the body were read already (a byte order mark only counts at its start). */
  private started = false;
  /** The start of a line whose end has not arrived yet. */
  private carry = '';
  /** A chunk ended on CR: an LF opening the next one belongs to that line end. */
  private afterCr = false;
  private data: string | undefined;

  constructor(onData: (data: string) => void) {
    this.onData = onData;
  }

  /** Reads one chunk of the body. Events complete in it are handed over before it returns. */
  feed(chunk: Uint8Array): void {
    let start = 0;
    if (this.afterCr && chunk.length > 0) {
      this.afterCr = false;
      if (chunk[0] === LF) start = 1;
    }
    const bytes = start === 0 ? chunk : chunk.subarray(start);
    if (bytes.length === 0) return;
    // Most chunks are plain ASCII and leave no character half read: those are read as Latin-1, the
    // same characters for ASCII, without a streaming decoder's work.
    if (!this.decoderHolds && isAscii(bytes)) {
      this.started = true;
      this.feedText(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1'));
      return;
    }
    // The decoder drops a byte order mark opening the body, and must keep one that comes later.
    this.decoder ??= new TextDecoder('utf-8', { ignoreBOM: this.started });
    this.started = true;
    // A chunk ending on an ASCII byte cannot leave the start of a character in the decoder.
    this.decoderHolds = (bytes[bytes.length - 1] as number) >= 0x80;
    this.feedText(this.decoder.decode(bytes, { stream: true }));
  }

  /** The body ended: a line still open is finished (an unterminated event is dropped, as the rules say). */
  end(): void {
    const rest = this.decoder?.decode() ?? '';
    if (rest) this.feedText(rest);
    if (this.carry) {
      const line = this.carry;
      this.carry = '';
      this.line(line);
    }
    this.data = undefined;
  }

  private feedText(chunk: string): void {
    const text = this.carry === '' ? chunk : this.carry + chunk;
    let from = 0;
    for (;;) {
      const lf = text.indexOf('\n', from);
      const cr = text.indexOf('\r', from);
      let end: number;
      let next: number;
      if (cr === -1 || (lf !== -1 && lf < cr)) {
        if (lf === -1) break;
        end = lf;
        next = lf + 1;
      } else {
        end = cr;
        if (cr + 1 === text.length) {
          // CRLF may be split across chunks: end the line here and skip an LF that opens the next.
          this.afterCr = true;
          next = cr + 1;
        } else {
          next = text.charCodeAt(cr + 1) === LF ? cr + 2 : cr + 1;
        }
      }
      this.line(text.slice(from, end));
      from = next;
    }
    this.carry = from === 0 ? text : text.slice(from);
    if (this.carry.length + (this.data?.length ?? 0) > MAX_EVENT_CHARS) {
      throw new AgentStreamError('malformed', 'agent sent an oversized event');
    }
  }

  private line(line: string): void {
    if (line === '') {
      const data = this.data;
      if (data === undefined) return;
      this.data = undefined;
      this.onData(data);
      return;
    }
    // The common case first: `data: <value>`.
    let value: string;
    if (line.startsWith('data:')) {
      value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
    } else {
      if (line.charCodeAt(0) === 58 /* : a comment */) return;
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      if (field !== 'data') return;
      value = '';
    }
    this.data = this.data === undefined ? value : `${this.data}\n${value}`;
    if (this.data.length > MAX_EVENT_CHARS) throw new AgentStreamError('malformed', 'agent sent an oversized event');
  }
}

/**
 * One answer being read: events go to the token callback as soon as they are parsed, and the outcome
 * (the final event, the agent's error event, or a broken stream) settles {@link AnswerReader.done}.
 * Chunks that arrive before a token callback is attached are kept and read when it is.
 */
export class AnswerReader {
  /** Resolves with the final event; rejects with {@link AgentReportedError} or {@link AgentStreamError}, or what `onToken` threw. */
  readonly done: Promise<FinalAnswer>;
  private resolveDone!: (final: FinalAnswer) => void;
  private rejectDone!: (err: unknown) => void;
  private readonly events: EventDataReader;
  private onToken: ((text: string, literal: string) => void) | undefined;
  private pending: Uint8Array[] | undefined = [];
  private pendingEnd = false;
  private settledAs: 'final' | 'failed' | undefined;

  constructor() {
    this.done = new Promise<FinalAnswer>((resolve, reject) => {
      this.resolveDone = resolve;
      this.rejectDone = reject;
    });
    // Nobody may be listening yet when the body fails early; the rejection is read through `done`.
    this.done.catch(() => undefined);
    this.events = new EventDataReader((data) => this.event(data));
  }

  /** Whether the outcome is decided: no further data matters. */
  get settled(): boolean {
    return this.settledAs !== undefined;
  }

  /** Whether the final event arrived. */
  get final(): boolean {
    return this.settledAs === 'final';
  }

  /** Starts handing tokens to `onToken`, first those already received. Call once. */
  start(onToken: (text: string, literal: string) => void): Promise<FinalAnswer> {
    this.onToken = onToken;
    const pending = this.pending;
    this.pending = undefined;
    if (pending) for (const chunk of pending) this.chunk(chunk);
    if (this.pendingEnd) this.end();
    return this.done;
  }

  /** A chunk of the body, read during the call (kept as a copy until {@link start}). */
  chunk(chunk: Uint8Array): void {
    if (this.settledAs !== undefined) return;
    if (this.pending) {
      // Copied: the caller's buffer is only valid during the call.
      this.pending.push(new Uint8Array(chunk));
      return;
    }
    try {
      this.events.feed(chunk);
    } catch (err) {
      this.fail(err);
    }
  }

  /** The body ended cleanly. Without a final event before it, the answer is incomplete. */
  end(): void {
    if (this.settledAs !== undefined) return;
    if (this.pending) {
      this.pendingEnd = true;
      return;
    }
    try {
      this.events.end();
    } catch (err) {
      this.fail(err);
      return;
    }
    this.fail(new AgentStreamError('incomplete', 'the agent ended the answer without its final event'));
  }

  /** The body broke. */
  fail(err: unknown): void {
    if (this.settledAs !== undefined) return;
    this.settledAs = 'failed';
    this.pending = undefined;
    this.rejectDone(err);
  }

  private event(data: string): void {
    if (this.settledAs !== undefined) return;
    const onToken = this.onToken as (text: string, literal: string) => void;
    const literal = verbatimTokenLiteral(data);
    if (literal !== undefined) {
      onToken(literal.slice(1, -1), literal);
      return;
    }
    const event = agentEventOf(data);
    if (event === undefined) return;
    if (event.type === 'token') {
      onToken(event.text, JSON.stringify(event.text));
      return;
    }
    if (event.type === 'final') {
      this.settledAs = 'final';
      this.resolveDone(event.citations === undefined ? {} : { citations: event.citations });
      return;
    }
    throw new AgentReportedError(event.message);
  }
}

/**
 * The answer was cut because this service is stopping: its agent client closed with the answer still
 * streaming (past the stop's drain). To the browser it is the connection breaking, as before (an
 * `interrupted` stream), but the agent did nothing wrong, so it is not counted as an agent error: a
 * rolling deploy that catches a long answer would otherwise page someone.
 */
export class AgentStreamStoppedError extends AgentStreamError {
  constructor() {
    super('interrupted', 'agent connection broke in the middle of the answer');
    this.name = 'AgentStreamStoppedError';
  }
}

/**
 * What a failing answer body means for the stream: broken HTTP framing (a bad chunk size, a chunk
 * longer than its size) is the agent's malformed answer, like a broken event; the client stopping is
 * {@link AgentStreamStoppedError}; anything else is the connection breaking.
 */
export function streamFailureOf(err: unknown): AgentStreamError {
  if (err instanceof AgentStreamError) return err;
  if (err instanceof AgentWireError && err.code === 'stopped') return new AgentStreamStoppedError();
  if (err instanceof AgentWireError && err.code === 'malformed') {
    return new AgentStreamError('malformed', 'agent broke the HTTP framing in the middle of the answer');
  }
  return new AgentStreamError('interrupted', 'agent connection broke in the middle of the answer');
}
