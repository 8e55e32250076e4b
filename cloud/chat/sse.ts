/**
 * The Server-Sent Events stream to the browser: one `data: <json>` frame per event with an increasing
 * `id:`, a comment every heartbeat interval so proxies keep the connection, and headers that stop
 * buffering and compression on the way.
 */
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** The stream frames of the seed. */
export type StreamFrame =
  | { type: 'token'; text: string }
  | { type: 'done'; message: unknown }
  | { type: 'error'; error: string; message: string };

export const DEFAULT_HEARTBEAT_MS = 15_000;

/** What Node's HTTP response keeps about its connection (not in its typings). */
interface OutgoingState {
  chunkedEncoding?: boolean;
  outputData?: unknown[];
}

/**
 * The connection of a response whose headers went out with chunked transfer encoding and which owns
 * its connection with nothing queued, or undefined. Writing an HTTP/1.1 chunk to that connection is
 * what `res.write` ends up doing, without its per-write work (a cork and an uncork on the next tick, a
 * four-part vectored write): this is written once per token of every answer.
 */
function chunkedWireOf(res: ServerResponse): Socket | undefined {
  const socket = res.socket as (Socket & { _httpMessage?: unknown }) | null;
  const state = res as unknown as OutgoingState;
  if (!socket || socket._httpMessage !== res || !res.headersSent) return undefined;
  if (state.chunkedEncoding !== true || state.outputData?.length !== 0) return undefined;
  return socket;
}

/** `text` as one HTTP/1.1 chunk of a chunked body: its size in hex, CRLF, the text, CRLF. */
export function httpChunk(text: string): string {
  return `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
}

export class SseStream {
  private readonly res: ServerResponse;
  private readonly heartbeatMs: number;
  private readonly onDisconnect: () => void;
  private nextId = 1;
  private heartbeat: ReturnType<typeof setInterval> | undefined;
  /** Where frames go as HTTP/1.1 chunks once the stream is open (see {@link chunkedWireOf}). */
  private wire: Socket | undefined;
  private clientGone = false;

  constructor(res: ServerResponse, heartbeatMs: number = DEFAULT_HEARTBEAT_MS, onDisconnect: () => void = () => undefined) {
    this.res = res;
    this.heartbeatMs = heartbeatMs;
    this.onDisconnect = onDisconnect;
  }

  /**
   * Starts watching for the browser going away, which may happen before the stream opens (while the
   * agent is being asked). `onDisconnect` runs once if it leaves before the stream ended.
   */
  watch(): void {
    const { res } = this;
    const gone = () => {
      if (this.clientGone || res.writableFinished) return;
      this.clientGone = true;
      this.stopHeartbeat();
      this.onDisconnect();
    };
    if (res.destroyed || res.socket?.destroyed) gone();
    else res.on('close', gone);
  }

  /**
   * Sends the headers and starts the heartbeat. The headers leave at the end of the current tick
   * together with any frame written before then (the agent's first token usually arrives with its
   * headers), so the browser gets the opening and the first token in one packet.
   */
  open(): void {
    const { res } = this;
    if (this.disconnected) return;
    res.statusCode = 200;
    res.setHeader('content-type', 'text/event-stream; charset=utf-8');
    res.setHeader('cache-control', 'no-cache, no-transform');
    // No `connection` header: Node keeps an HTTP/1.1 connection alive by default, and closes it after
    // the stream when the request asked for `Connection: close` (setting keep-alive would override that).
    res.setHeader('x-accel-buffering', 'no');
    const socket = res.socket;
    if (socket) {
      socket.setNoDelay(true);
      socket.cork();
      process.nextTick(() => socket.uncork());
    }
    res.flushHeaders();
    this.wire = chunkedWireOf(res);
    this.heartbeat = setInterval(() => this.write(': heartbeat\n\n'), this.heartbeatMs);
  }

  /** True once the browser has gone away before the stream ended. */
  get disconnected(): boolean {
    return this.clientGone || this.res.destroyed;
  }

  /** Writes one frame with the next id. Does nothing once the browser is gone. */
  send(frame: StreamFrame): void {
    this.write(`id: ${this.nextId++}\ndata: ${JSON.stringify(frame)}\n\n`);
  }

  /**
   * Writes a `token` frame from its text as a JSON string literal (`JSON.stringify(text)`, which the
   * agent adapter usually has already): the same bytes as `send({type: 'token', text})`, built without
   * an object or a serialisation per token (this runs for every token of every answer).
   */
  sendToken(literal: string): void {
    this.write(`id: ${this.nextId++}\ndata: {"type":"token","text":${literal}}\n\n`);
  }

  /** Ends the stream. */
  end(): void {
    this.stopHeartbeat();
    if (!this.res.writableEnded) this.res.end();
  }

  private write(text: string): void {
    if (this.disconnected || this.res.writableEnded) return;
    const wire = this.wire;
    if (wire !== undefined && wire.writable) {
      wire.write(httpChunk(text));
      return;
    }
    this.res.write(text);
  }

  private stopHeartbeat(): void {
    if (this.heartbeat !== undefined) clearInterval(this.heartbeat);
    this.heartbeat = undefined;
  }
}
