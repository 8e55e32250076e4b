/**
 * A connection to Redis of its own for fire-and-forget command pipelines: a request is RESP bytes
 * written as they are, holding a known number of commands whose replies are single lines (integers,
 * simple strings, errors); it settles once that many replies came back, failing with the first error
 * reply. Publishing readings this way costs Redis about half the CPU of PUBLISH from a script, and the
 * service no command object per message.
 *
 * The connection follows an ioredis client's settings (host, port, username, password, TLS) and its
 * health: while that client is not ready a request fails at once (as a client without offline queue
 * does), and a lost connection fails the requests waiting on it and is opened again on the next one.
 */
import net from 'node:net';
import tls from 'node:tls';
import type { Redis } from 'ioredis';

interface Waiting {
  replies: number;
  error: Error | undefined;
  resolve: () => void;
  reject: (err: Error) => void;
}

const NEWLINE = 0x0a;
const MINUS = 0x2d;

/** One RESP command as bytes: `*n`, then each argument as a bulk string. */
export function respCommand(...args: Array<string | Buffer>): Buffer {
  const parts: Buffer[] = [Buffer.from(`*${args.length}\r\n`)];
  for (const arg of args) {
    const bytes = typeof arg === 'string' ? Buffer.from(arg) : arg;
    parts.push(Buffer.from(`$${bytes.length}\r\n`), bytes, Buffer.from('\r\n'));
  }
  return Buffer.concat(parts);
}

export class RespPipeline {
  private socket: net.Socket | undefined;
  private readonly waiting: Waiting[] = [];
  /** Bytes of the reply line being read (only kept for an error reply). */
  private line: Buffer[] = [];
  private lineIsError = false;
  private atLineStart = true;
  private closed = false;

  constructor(private readonly redis: Redis) {
    // The client it follows was closed: so is this connection.
    redis.once('end', () => this.close());
  }

  /** Sends `bytes`, `replies` commands; resolves once every reply came back, rejects on an error reply. */
  send(bytes: Buffer, replies: number): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the Redis pipeline is closed'));
    if (this.redis.status !== 'ready') return Promise.reject(new Error(`Redis is not ready (${this.redis.status})`));
    const socket = this.socket ?? this.connect();
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ replies, error: undefined, resolve, reject });
      socket.ref();
      socket.write(bytes);
    });
  }

  /** Ends the connection once the replies still expected are in (or it fails). */
  close(): void {
    this.closed = true;
    this.socket?.end();
  }

  private connect(): net.Socket {
    const { host, port, username, password, tls: secure, connectTimeout } = this.redis.options;
    const socket = secure ? tls.connect({ ...secure, host: host ?? '127.0.0.1', port: port ?? 6379 }) : net.connect({ host: host ?? '127.0.0.1', port: port ?? 6379 });
    socket.setNoDelay(true);
    // Idle, it keeps no process alive (it is ref'd only while replies are awaited).
    socket.unref();
    socket.setTimeout(connectTimeout ?? 10_000, () => socket.destroy(new Error('Redis did not answer the connection in time')));
    socket.once(secure ? 'secureConnect' : 'connect', () => socket.setTimeout(0));
    socket.on('data', (chunk: Buffer) => this.read(chunk));
    socket.on('error', () => undefined);
    socket.once('close', () => this.lost(socket));
    this.socket = socket;
    if (password) {
      const auth = username ? respCommand('AUTH', username, password) : respCommand('AUTH', password);
      this.waiting.push({ replies: 1, error: undefined, resolve: () => undefined, reject: () => socket.destroy() });
      socket.write(auth);
    }
    return socket;
  }

  private lost(socket: net.Socket): void {
    if (this.socket !== socket) return;
    this.socket = undefined;
    this.line = [];
    this.atLineStart = true;
    this.lineIsError = false;
    const failed = this.waiting.splice(0);
    for (const w of failed) w.reject(new Error('the connection to Redis closed before its replies came'));
  }

  private read(chunk: Buffer): void {
    let from = 0;
    while (from < chunk.length) {
      if (this.atLineStart) {
        this.lineIsError = chunk[from] === MINUS;
        this.atLineStart = false;
      }
      const end = chunk.indexOf(NEWLINE, from);
      if (end < 0) {
        if (this.lineIsError) this.line.push(chunk.subarray(from));
        return;
      }
      if (this.lineIsError) this.line.push(chunk.subarray(from, end + 1));
      this.reply();
      from = end + 1;
    }
  }

  private reply(): void {
    const error = this.lineIsError ? new Error(`Redis answered ${Buffer.concat(this.line).toString('utf8').trim()}`) : undefined;
    this.line = [];
    this.atLineStart = true;
    this.lineIsError = false;
    const w = this.waiting[0];
    if (w === undefined) return;
    w.error ??= error;
    w.replies -= 1;
    if (w.replies > 0) return;
    this.waiting.shift();
    if (this.waiting.length === 0) this.socket?.unref();
    if (w.error) w.reject(w.error);
    else w.resolve();
  }
}
