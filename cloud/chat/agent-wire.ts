/**
 * The HTTP/1.1 client the agent adapter calls /ask through: one request per connection at a time, kept
 * alive and pooled, the response parsed here as bytes arrive.
 *
 * Why not a general-purpose client: every token of every answer passes through this code. On the chat
 * benchmark's load (10,000 tokens a second on two cores) a relay reading the agent through undici's
 * request stream spent 78–80 µs of CPU per relayed token. The same relay over a plain socket with this
 * kind of parser spent 48–50 µs, and 43 µs with the socket reading into one shared buffer (`onread`).
 * That CPU is what the event loop then has for new questions.
 *
 * What it does:
 * - **Framing** (RFC 9112): a chunked body (extensions and trailers read and dropped), a
 *   Content-Length body, or a body read until the agent closes. Interim 1xx responses are skipped. A
 *   head over {@link MAX_HEAD_BYTES}, a malformed status line, header, length or chunk size fails the
 *   exchange with `malformed`, and its connection is closed.
 * - **Connections:** a connection is pooled again only after a complete response that allows it (HTTP/1.1,
 *   no `connection: close`, a framed body, no bytes beyond it). An idle connection is closed after the
 *   agent's `keep-alive: timeout` hint less a second, or {@link DEFAULT_IDLE_MS}, or as soon as the
 *   agent closes it or sends anything unasked.
 * - **One connection ahead:** when a question needs a new connection (every pooled one is busy, as in a
 *   burst of new conversations), a spare is opened beside it for the next one, so a question in a burst
 *   does not wait for a TCP handshake on the service's busy event loop. A spare nobody takes within
 *   {@link SPARE_IDLE_MS} is closed, so a steady pool holds no extra connection.
 * - **A pooled connection the agent had closed:** if it fails before a single byte of the response,
 *   the request is sent once more on a new connection (the agent closing an idle connection just as it
 *   is reused is a race every keep-alive client meets). A new connection is never retried.
 * - **Timeouts:** connecting, and from the request to the response head. Silence inside the body is the
 *   caller's to judge (it sees the answer, not only bytes).
 * - `https:` agents are reached over TLS with the same parser.
 */
import net from 'node:net';
import tls from 'node:tls';

/** How long an idle kept-alive connection is kept when the agent gives no `keep-alive: timeout`. */
export const DEFAULT_IDLE_MS = 4_000;
/** How long a connection opened ahead of need waits to be taken before it is closed. */
export const SPARE_IDLE_MS = 1_000;
/** The largest response head (status line and headers, interim responses included) read. */
export const MAX_HEAD_BYTES = 64 * 1024;
/** The longest chunk-size line or trailer line read. */
const MAX_LINE_BYTES = 4 * 1024;

export type WireFailure = 'connect_timeout' | 'connect_failed' | 'headers_timeout' | 'closed' | 'malformed' | 'stopped';

/** Why an exchange with the agent failed at the wire. */
export class AgentWireError extends Error {
  readonly code: WireFailure;
  constructor(code: WireFailure, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AgentWireError';
    this.code = code;
  }
}

/** What one exchange reports, in this order: a connection, the head, body bytes, the end or an error. */
export interface ExchangeHandler {
  /** Called once, first, with a function that aborts the exchange (its error then reaches `onError`). */
  onConnect(abort: (err?: Error) => void): void;
  /** The final response head: status and headers as `[name, value, …]`, names lowercased. */
  onHeaders(statusCode: number, rawHeaders: string[]): void;
  /** Body bytes, de-chunked. The buffer is only valid during the call: copy what must outlive it. */
  onData(chunk: Buffer): void;
  /** The body ended as its framing says. */
  onComplete(): void;
  /** The exchange failed or was aborted; nothing more is reported. */
  onError(err: Error): void;
}

export interface AgentWireOptions {
  /** `http:` or `https:` origin of the agent. */
  origin: URL;
  connectTimeoutMs: number;
  /** From the request written to the response head. */
  headersTimeoutMs: number;
  /** For an `https:` agent: TLS options beyond the defaults (say, a private CA). */
  tls?: tls.ConnectionOptions;
}

/** One shared read buffer: a connection's bytes are parsed synchronously before the next read lands. */
const READ_BUFFER = Buffer.allocUnsafe(64 * 1024);

/** A header value sent as it came (latin1, as Node reads request headers): no control characters. */
const SAFE_HEADER_VALUE = /^[\t\u0020-\u007e\u0080-\u00ff]*$/;
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const STATUS_LINE = /^HTTP\/1\.([01]) ([1-9]\d\d)(?: [^\r\n]*)?$/;

const enum Body {
  Head,
  Chunked,
  Length,
  UntilClose,
  Done,
}

const enum Chunk {
  Size,
  Data,
  DataEnd,
  Trailers,
}

/** A parsed response head, with what it means for the body and the connection. */
interface Head {
  statusCode: number;
  rawHeaders: string[];
  body: Body;
  length: number;
  reusable: boolean;
  /** The agent's `keep-alive: timeout`, in ms, when it gave one. */
  keepAliveMs: number | undefined;
}

function malformed(message: string): AgentWireError {
  return new AgentWireError('malformed', `the agent's response is malformed: ${message}`);
}

/** Reads a head (status line and header lines, without the blank line). Throws `malformed`. */
function parseHead(text: string): Head {
  const lines = text.split(/\r?\n/);
  const status = STATUS_LINE.exec(lines[0] ?? '');
  if (!status) throw malformed('bad status line');
  const statusCode = Number(status[2]);
  const rawHeaders: string[] = [];
  const values = new Map<string, string[]>();
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    const name = colon > 0 ? line.slice(0, colon) : '';
    if (!HEADER_NAME.test(name)) throw malformed('bad header line');
    const value = line.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, '');
    const lower = name.toLowerCase();
    rawHeaders.push(lower, value);
    const seen = values.get(lower);
    if (seen) seen.push(value);
    else values.set(lower, [value]);
  }
  const tokens = (name: string) => (values.get(name) ?? []).flatMap((v) => v.split(',')).map((v) => v.trim().toLowerCase()).filter((v) => v.length > 0);
  let reusable = status[1] === '1' && !tokens('connection').includes('close');
  let body: Body;
  let length = 0;
  const codings = tokens('transfer-encoding');
  const lengths = values.get('content-length');
  if (statusCode < 200 || statusCode === 204 || statusCode === 304) {
    body = Body.Done;
  } else if (codings.length > 0) {
    body = codings[codings.length - 1] === 'chunked' ? Body.Chunked : Body.UntilClose;
    // Both framings at once is how requests get smuggled: read it by Transfer-Encoding, never reuse.
    if (lengths || body === Body.UntilClose) reusable = false;
  } else if (lengths) {
    const distinct = new Set(lengths.flatMap((v) => v.split(',')).map((v) => v.trim()));
    const [only] = distinct;
    if (distinct.size !== 1 || only === undefined || !/^\d{1,15}$/.test(only)) throw malformed('bad content-length');
    length = Number(only);
    body = length === 0 ? Body.Done : Body.Length;
  } else {
    body = Body.UntilClose;
    reusable = false;
  }
  const hint = /(?:^|[,;\s])timeout\s*=\s*(\d{1,9})/i.exec((values.get('keep-alive') ?? []).join(','));
  return { statusCode, rawHeaders, body, length, reusable, keepAliveMs: hint ? Number(hint[1]) * 1000 : undefined };
}

/**
 * The response parser of one exchange: bytes in, head, body bytes and end out. Throws
 * {@link AgentWireError} `malformed`.
 */
class ResponseParser {
  head: Head | undefined;
  /** Bytes received for this response. */
  received = 0;
  /** Bytes that arrived after the response ended (the connection then cannot be reused). */
  trailing = false;
  private state = Body.Head;
  private headBytes: Buffer[] = [];
  private headLength = 0;
  private chunkState = Chunk.Size;
  private left = 0;
  private line = '';
  private trailerBytes = 0;
  private ended = false;

  constructor(
    private readonly onHead: (head: Head) => void,
    private readonly onBody: (chunk: Buffer) => void,
    private readonly onEnd: () => void,
  ) {}

  /** Whether the socket closing now ends the body (a body read until close). */
  get endsAtClose(): boolean {
    return this.state === Body.UntilClose;
  }

  feed(bytes: Buffer): void {
    this.received += bytes.length;
    let at = 0;
    while (at < bytes.length && this.state !== Body.Done) {
      switch (this.state) {
        case Body.Head:
          at = this.readHead(bytes, at);
          break;
        case Body.Length: {
          const end = Math.min(bytes.length, at + this.left);
          this.left -= end - at;
          this.onBody(bytes.subarray(at, end));
          at = end;
          if (this.left === 0) this.state = Body.Done;
          break;
        }
        case Body.UntilClose:
          this.onBody(at === 0 ? bytes : bytes.subarray(at));
          at = bytes.length;
          break;
        case Body.Chunked:
          at = this.readChunked(bytes, at);
          break;
      }
    }
    // Reported once the whole read is looked at, so the end already knows of bytes beyond it.
    if (at < bytes.length) this.trailing = true;
    if (this.state === Body.Done && !this.ended) {
      this.ended = true;
      this.onEnd();
    }
  }

  /** Reads head bytes from `at`; returns where the head ended, or `bytes.length` if it goes on. */
  private readHead(bytes: Buffer, at: number): number {
    const part = bytes.subarray(at);
    // Copied: the buffer is reused for the next read.
    this.headBytes.push(Buffer.from(part));
    this.headLength += part.length;
    const all = this.headBytes.length === 1 ? this.headBytes[0]! : Buffer.concat(this.headBytes);
    const text = all.toString('latin1');
    const end = /\r?\n\r?\n/.exec(text);
    if (!end) {
      if (this.headLength > MAX_HEAD_BYTES) throw malformed('the head is too large');
      this.headBytes = [all];
      return bytes.length;
    }
    const headEnd = end.index + end[0].length;
    if (headEnd > MAX_HEAD_BYTES) throw malformed('the head is too large');
    const head = parseHead(text.slice(0, end.index));
    // What followed the head in this read: the rest of `part` past the head's end.
    const consumed = headEnd - (this.headLength - part.length);
    this.headBytes = [];
    this.headLength = 0;
    if (head.statusCode < 200) {
      if (head.statusCode === 101) throw malformed('an upgrade nobody asked for');
      return at + consumed;
    }
    this.head = head;
    this.state = head.body;
    if (head.body === Body.Length) this.left = head.length;
    this.onHead(head);
    return at + consumed;
  }

  private readChunked(bytes: Buffer, at: number): number {
    while (at < bytes.length && this.state === Body.Chunked) {
      switch (this.chunkState) {
        case Chunk.Data: {
          const end = Math.min(bytes.length, at + this.left);
          this.left -= end - at;
          this.onBody(bytes.subarray(at, end));
          at = end;
          if (this.left === 0) {
            this.chunkState = Chunk.DataEnd;
            this.line = '';
          }
          break;
        }
        case Chunk.DataEnd: {
          const byte = bytes[at++]!;
          if (byte === 13 && this.line === '') this.line = '\r';
          else if (byte === 10) this.chunkState = Chunk.Size;
          else throw malformed('a chunk is longer than its size');
          if (this.chunkState === Chunk.Size) this.line = '';
          break;
        }
        case Chunk.Size:
        case Chunk.Trailers: {
          if (this.chunkState === Chunk.Size && this.line === '') {
            // The usual size line, `<hex>\r\n` whole in this read, without a string (once per token).
            const next = this.plainSizeLine(bytes, at);
            if (next >= 0) {
              at = next;
              break;
            }
          }
          const lf = bytes.indexOf(10, at);
          const end = lf < 0 ? bytes.length : lf;
          this.line += bytes.toString('latin1', at, end);
          if (this.line.length > MAX_LINE_BYTES) throw malformed('a chunk line is too long');
          at = lf < 0 ? bytes.length : lf + 1;
          if (lf >= 0) this.endLine();
          break;
        }
      }
    }
    return at;
  }

  /**
   * Reads a size line of 1 to 8 hex digits and CRLF starting at `at`, wholly in `bytes`: sets the
   * chunk's size and state and answers where the line ended. Answers -1 for anything else (an
   * extension, whitespace, a bare LF, a line cut by the read), which the general path then reads.
   */
  private plainSizeLine(bytes: Buffer, at: number): number {
    let size = 0;
    let i = at;
    for (; i < bytes.length && i - at <= 8; i++) {
      const c = bytes[i]!;
      const digit = c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c >= 65 && c <= 70 ? c - 55 : -1;
      if (digit < 0) break;
      size = size * 16 + digit;
    }
    const digits = i - at;
    if (digits === 0 || digits > 8 || bytes[i] !== 13 || bytes[i + 1] !== 10) return -1;
    this.left = size;
    this.chunkState = size === 0 ? Chunk.Trailers : Chunk.Data;
    return i + 2;
  }

  private endLine(): void {
    const line = this.line.endsWith('\r') ? this.line.slice(0, -1) : this.line;
    this.line = '';
    if (this.chunkState === Chunk.Trailers) {
      this.trailerBytes += line.length;
      if (this.trailerBytes > MAX_HEAD_BYTES) throw malformed('the trailers are too large');
      if (line === '') this.state = Body.Done;
      return;
    }
    const semicolon = line.indexOf(';');
    const size = (semicolon < 0 ? line : line.slice(0, semicolon)).trim();
    if (!/^[0-9a-fA-F]{1,8}$/.test(size)) throw malformed('bad chunk size');
    this.left = parseInt(size, 16);
    this.chunkState = this.left === 0 ? Chunk.Trailers : Chunk.Data;
  }
}

/** One socket to the agent, carrying one exchange at a time. */
class Connection {
  readonly socket: net.Socket;
  /** Exchanges it carried. */
  uses = 0;
  /** Where its bytes go: the current exchange, or the idle watch. */
  sink: ((bytes: Buffer) => void) | undefined;
  /** Called once when the socket is gone. */
  onGone: ((err: Error | undefined) => void) | undefined;
  gone = false;
  private idleTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(socket: net.Socket, reads: 'onread' | 'data') {
    this.socket = socket;
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 60_000);
    if (reads === 'data') socket.on('data', (bytes: Buffer) => this.sink?.(bytes));
    let failure: Error | undefined;
    socket.on('error', (err) => (failure ??= err));
    socket.on('end', () => socket.destroy());
    socket.on('close', () => {
      this.gone = true;
      this.clearIdle();
      const onGone = this.onGone;
      this.onGone = undefined;
      onGone?.(failure);
    });
  }

  get usable(): boolean {
    return !this.gone && !this.socket.destroyed && this.socket.readyState === 'open';
  }

  /** Parks it: any byte or its end closes it, and so does `idleMs` going by. */
  park(idleMs: number, onExpired: () => void): void {
    this.sink = () => this.socket.destroy();
    this.idleTimer = setTimeout(() => {
      onExpired();
      this.socket.destroy();
    }, idleMs);
    this.idleTimer.unref();
  }

  clearIdle(): void {
    if (this.idleTimer !== undefined) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
  }
}

/** A request as bytes: the head in latin1 (header values go out as they came) and the body. */
export interface WireRequest {
  path: string;
  headers: ReadonlyArray<readonly [string, string]>;
  body: string;
}

/** One request and its response, on one connection (two, if a pooled one turned out closed). */
class Exchange {
  private connection: Connection | undefined;
  private parser: ResponseParser | undefined;
  private headersTimer: ReturnType<typeof setTimeout> | undefined;
  private retried = false;
  private over = false;

  constructor(
    private readonly wire: AgentWire,
    private readonly bytes: { head: string; body: string },
    private readonly handler: ExchangeHandler,
  ) {}

  start(): void {
    this.handler.onConnect((err) => this.fail(err ?? new AgentWireError('closed', 'the request was aborted')));
    if (this.over) return;
    const pooled = this.wire.takeIdle();
    if (pooled) this.send(pooled, true);
    else this.wire.connect((err, connection) => (err ? this.fail(err) : this.send(connection!, false)), true);
  }

  /** Aborts it from outside (the client is stopping). */
  abort(err: Error): void {
    this.fail(err);
  }

  private send(connection: Connection, pooled: boolean): void {
    if (this.over || this.wire.stopped) {
      if (this.wire.stopped) connection.socket.destroy();
      else this.wire.release(connection, undefined);
      if (!this.over) this.fail(new AgentWireError('stopped', 'the agent client is closed'));
      return;
    }
    this.connection = connection;
    connection.clearIdle();
    connection.uses++;
    const parser = new ResponseParser(
      (head) => {
        this.clearHeadersTimer();
        this.handler.onHeaders(head.statusCode, head.rawHeaders);
      },
      (chunk) => {
        if (!this.over) this.handler.onData(chunk);
      },
      () => this.complete(),
    );
    this.parser = parser;
    connection.sink = (bytes) => {
      if (this.over) return;
      try {
        parser.feed(bytes);
      } catch (err) {
        this.fail(err as Error);
      }
    };
    connection.onGone = (err) => this.gone(pooled, err);
    this.headersTimer = setTimeout(() => this.fail(new AgentWireError('headers_timeout', 'the agent did not answer in time')), this.wire.headersTimeoutMs);
    const { socket } = connection;
    socket.cork();
    socket.write(this.bytes.head, 'latin1');
    socket.write(this.bytes.body, 'utf8');
    socket.uncork();
  }

  /** The socket closed while this exchange owned it. */
  private gone(pooled: boolean, err: Error | undefined): void {
    if (this.over) return;
    const parser = this.parser;
    if (parser?.endsAtClose) {
      this.complete();
      return;
    }
    if (pooled && !this.retried && parser !== undefined && parser.received === 0) {
      // A kept-alive connection the agent had just closed: once more, on a new connection.
      this.retried = true;
      this.clearHeadersTimer();
      this.connection = undefined;
      this.parser = undefined;
      this.wire.connect((connectErr, connection) => (connectErr ? this.fail(connectErr) : this.send(connection!, false)), false);
      return;
    }
    this.fail(new AgentWireError('closed', 'the agent closed the connection', { cause: err }));
  }

  private complete(): void {
    if (this.over) return;
    this.over = true;
    this.clearHeadersTimer();
    const connection = this.connection;
    const parser = this.parser;
    this.wire.finished(this);
    if (connection) {
      connection.onGone = undefined;
      const reusable = parser?.head?.reusable === true && !parser.trailing && !parser.endsAtClose;
      this.wire.release(connection, reusable ? parser?.head?.keepAliveMs : undefined, reusable);
    }
    this.handler.onComplete();
  }

  private fail(err: Error): void {
    if (this.over) return;
    this.over = true;
    this.clearHeadersTimer();
    this.wire.finished(this);
    const connection = this.connection;
    if (connection) {
      connection.onGone = undefined;
      connection.sink = undefined;
      connection.socket.destroy();
    }
    this.handler.onError(err);
  }

  private clearHeadersTimer(): void {
    if (this.headersTimer !== undefined) clearTimeout(this.headersTimer);
    this.headersTimer = undefined;
  }
}

/** The client: a pool of connections to one agent origin. */
export class AgentWire {
  readonly headersTimeoutMs: number;
  stopped = false;
  private readonly origin: URL;
  private readonly connectTimeoutMs: number;
  private readonly tlsOptions: tls.ConnectionOptions;
  private readonly idle: Connection[] = [];
  private readonly active = new Set<Exchange>();
  private readonly all = new Set<Connection>();
  /** A spare being opened. */
  private opening = false;

  constructor(options: AgentWireOptions) {
    if (options.origin.protocol !== 'http:' && options.origin.protocol !== 'https:') throw new Error(`the agent URL must be http or https, not ${options.origin.protocol}`);
    this.origin = options.origin;
    this.connectTimeoutMs = options.connectTimeoutMs;
    this.headersTimeoutMs = options.headersTimeoutMs;
    this.tlsOptions = options.tls ?? {};
  }

  /**
   * Sends one request; the handler hears how it goes. Throws only for a header value that cannot go
   * on the wire as given (a control character, or a character outside latin1).
   */
  dispatch(request: WireRequest, handler: ExchangeHandler): void {
    let head = `POST ${request.path} HTTP/1.1\r\nhost: ${this.origin.host}\r\ncontent-length: ${Buffer.byteLength(request.body)}\r\n`;
    for (const [name, value] of request.headers) {
      if (!HEADER_NAME.test(name) || !SAFE_HEADER_VALUE.test(value)) throw new TypeError(`header ${name} cannot be sent as given`);
      head += `${name}: ${value}\r\n`;
    }
    const exchange = new Exchange(this, { head: `${head}\r\n`, body: request.body }, handler);
    this.active.add(exchange);
    if (this.stopped) {
      exchange.abort(new AgentWireError('stopped', 'the agent client is closed'));
      return;
    }
    exchange.start();
  }

  /** Closes every connection; exchanges still running fail with `stopped`. */
  stop(): void {
    this.stopped = true;
    for (const exchange of [...this.active]) exchange.abort(new AgentWireError('stopped', 'the agent client is closed'));
    for (const connection of [...this.all]) connection.socket.destroy();
    this.idle.length = 0;
  }

  /** @internal An idle connection still open, most recently parked first. */
  takeIdle(): Connection | undefined {
    for (let connection = this.idle.pop(); connection; connection = this.idle.pop()) {
      if (!connection.usable) continue;
      // A spare never used: the burst it was opened for goes on, so open the next one.
      if (connection.uses === 0) this.openSpare();
      return connection;
    }
    return undefined;
  }

  /** @internal Opens a connection; with `ahead`, a spare beside it for the next question. */
  connect(callback: (err: Error | undefined, connection?: Connection) => void, ahead: boolean): void {
    this.open(callback);
    if (ahead) this.openSpare();
  }

  /** @internal Back to the pool when `reusable`, otherwise closed. */
  release(connection: Connection, keepAliveMs: number | undefined, reusable = true): void {
    connection.sink = undefined;
    if (!reusable || this.stopped || !connection.usable) {
      connection.socket.destroy();
      return;
    }
    const idleMs = keepAliveMs === undefined ? DEFAULT_IDLE_MS : Math.min(DEFAULT_IDLE_MS, keepAliveMs - 1_000);
    if (idleMs <= 0) {
      connection.socket.destroy();
      return;
    }
    this.park(connection, idleMs);
  }

  /** @internal */
  finished(exchange: Exchange): void {
    this.active.delete(exchange);
  }

  private park(connection: Connection, idleMs: number): void {
    this.idle.push(connection);
    connection.onGone = () => this.forget(connection);
    connection.park(idleMs, () => this.forget(connection));
  }

  private forget(connection: Connection): void {
    const at = this.idle.indexOf(connection);
    if (at >= 0) this.idle.splice(at, 1);
  }

  private openSpare(): void {
    if (this.stopped || this.opening || this.idle.some((c) => c.uses === 0)) return;
    this.opening = true;
    this.open((err, connection) => {
      this.opening = false;
      if (err || !connection) return;
      if (this.stopped) connection.socket.destroy();
      else this.park(connection, SPARE_IDLE_MS);
    });
  }

  private open(callback: (err: Error | undefined, connection?: Connection) => void): void {
    const host = this.origin.hostname.replace(/^\[|\]$/g, '');
    const port = Number(this.origin.port) || (this.origin.protocol === 'https:' ? 443 : 80);
    let connection: Connection;
    let settled = false;
    const settle = (err: Error | undefined) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err) {
        connection.socket.destroy();
        callback(err);
      } else callback(undefined, connection);
    };
    if (this.origin.protocol === 'https:') {
      const socket = tls.connect({ ...this.tlsOptions, host, port, servername: net.isIP(host) ? undefined : host }, () => settle(undefined));
      connection = new Connection(socket, 'data');
    } else {
      const socket = net.connect({
        host,
        port,
        onread: {
          buffer: READ_BUFFER,
          callback: (length: number, buffer: Uint8Array) => {
            connection.sink?.((buffer as Buffer).subarray(0, length));
            return true;
          },
        },
      });
      socket.once('connect', () => settle(undefined));
      connection = new Connection(socket, 'onread');
    }
    this.all.add(connection);
    connection.socket.once('close', () => this.all.delete(connection));
    connection.socket.once('error', (err) => settle(new AgentWireError('connect_failed', 'the agent is unreachable', { cause: err })));
    connection.socket.once('close', () => settle(new AgentWireError('connect_failed', 'the agent is unreachable')));
    const timer = setTimeout(() => settle(new AgentWireError('connect_timeout', 'the agent did not accept the connection in time')), this.connectTimeoutMs);
  }
}
