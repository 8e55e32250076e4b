/**
 * An agent that answers POST /ask with scripted raw bytes on a loopback TCP server, for answers no HTTP
 * server library would write: a bad status line, broken chunk framing, pieces as small as one byte.
 * Requests on one connection are read in turn (keep-alive), and each consumes the next scripted reply.
 * Any other request, or one nobody scripted, is recorded in `unexpected` and its connection destroyed.
 * At teardown the connections and the server close, then the fake is verified.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { listen } from '../../../../shared/lifecycle.js';

type Teardown = { teardown(fn: () => unknown): void };

/** Bytes to write in order, each piece its own write a turn of the event loop apart. */
export type RawAnswer = Array<string | Buffer>;

/** How to answer one request. */
export interface RawReply {
  pieces: RawAnswer;
  /** End the connection once the pieces are written. */
  close?: boolean;
  /** Destroy the connection on receiving the request, writing nothing. */
  drop?: boolean;
  /** Write nothing and keep the connection open. */
  silent?: boolean;
}

/** What one request looked like on the wire. */
export interface SeenRequest {
  /** The connection it came on, by number (1 is the first accepted). */
  connection: number;
  head: string;
  body: string;
}

export class RawAgent {
  readonly requests: SeenRequest[] = [];
  readonly unexpected: string[] = [];
  /** Connections accepted so far. */
  connections = 0;
  /** The connections the client closed, by number. */
  readonly closedIds = new Set<number>();
  private readonly replies: RawReply[] = [];
  private readonly sockets = new Set<Socket>();
  private readonly server: Server = createServer((socket) => this.serve(socket));
  /** The port it listens on, once started. */
  port = 0;

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get origin(): URL {
    return new URL(this.url);
  }

  /** Queues the replies of the next requests, in order. */
  reply(...replies: RawReply[]): this {
    this.replies.push(...replies);
    return this;
  }

  /** Queues answers that each end their connection once written. */
  expect(...answers: RawAnswer[]): this {
    return this.reply(...answers.map((pieces) => ({ pieces, close: true })));
  }

  /** Throws when the fake got a request nobody scripted, or a reply was never asked for. */
  verify(): void {
    if (this.unexpected.length > 0) throw new Error(`the raw agent got unexpected requests: ${this.unexpected.join(' | ')}`);
    if (this.replies.length > 0) throw new Error(`${this.replies.length} scripted raw replies were never asked for`);
  }

  async start(t: Teardown): Promise<this> {
    t.teardown(() => this.verify());
    this.port = await listen(this.server, 0, '127.0.0.1');
    t.teardown(async () => {
      for (const socket of this.sockets) socket.destroy();
      await this.close();
    });
    return this;
  }

  /** Stops listening: its port then refuses connections. */
  async close(): Promise<void> {
    if (this.server.listening) await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private serve(socket: Socket): void {
    const connection = ++this.connections;
    this.sockets.add(socket);
    let pending = Buffer.alloc(0);
    let closing = false;
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('end', () => {
      if (!closing) this.closedIds.add(connection);
      socket.end();
    });
    socket.on('error', () => undefined);
    socket.on('data', (data: Buffer) => {
      pending = Buffer.concat([pending, data]);
      for (;;) {
        const end = pending.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = pending.subarray(0, end).toString('latin1');
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        if (pending.length < end + 4 + length) return;
        const body = pending.subarray(end + 4, end + 4 + length).toString('utf8');
        pending = pending.subarray(end + 4 + length);
        const requestLine = head.split('\r\n')[0] ?? '';
        const reply = requestLine.startsWith('POST /ask ') ? this.replies.shift() : undefined;
        if (!reply) {
          this.unexpected.push(requestLine);
          closing = true;
          socket.destroy();
          return;
        }
        this.requests.push({ connection, head, body });
        if (reply.drop) {
          closing = true;
          socket.destroy();
          return;
        }
        if (reply.silent) return;
        void this.write(socket, reply).then(() => {
          if (reply.close && !socket.destroyed) {
            closing = true;
            socket.end();
          }
        });
      }
    });
  }

  private async write(socket: Socket, reply: RawReply): Promise<void> {
    for (const piece of reply.pieces) {
      if (socket.destroyed) return;
      socket.write(piece);
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
}
