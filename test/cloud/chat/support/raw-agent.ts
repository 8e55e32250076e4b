/**
 * An agent that answers POST /ask with scripted raw bytes on a loopback TCP server, for answers no HTTP
 * server library would write: a bad status line, broken chunk framing. Each request consumes one
 * script queued with {@link RawAgent.expect}; any other request, or one nobody scripted, is recorded in
 * `unexpected` and its connection destroyed. At teardown the server closes, then the fake is verified.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { listen } from '../../../../shared/lifecycle.js';

type Teardown = { teardown(fn: () => unknown): void };

/** Bytes to write in order, each piece its own write a turn of the event loop apart; then the connection ends. */
export type RawAnswer = Array<string | Buffer>;

export class RawAgent {
  readonly unexpected: string[] = [];
  private readonly answers: RawAnswer[] = [];
  private readonly sockets = new Set<Socket>();
  private readonly server: Server = createServer((socket) => this.serve(socket));
  private port = 0;

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Queues the answers of the next requests, in order. */
  expect(...answers: RawAnswer[]): this {
    this.answers.push(...answers);
    return this;
  }

  /** Throws when the fake got a request nobody scripted, or a script was never asked for. */
  verify(): void {
    if (this.unexpected.length > 0) throw new Error(`the raw agent got unexpected requests: ${this.unexpected.join(' | ')}`);
    if (this.answers.length > 0) throw new Error(`${this.answers.length} scripted raw answers were never asked for`);
  }

  async start(t: Teardown): Promise<this> {
    t.teardown(() => this.verify());
    this.port = await listen(this.server, 0, '127.0.0.1');
    t.teardown(async () => {
      for (const socket of this.sockets) socket.destroy();
      await new Promise<void>((resolve) => this.server.close(() => resolve()));
    });
    return this;
  }

  private serve(socket: Socket): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => undefined);
    let pending = Buffer.alloc(0);
    socket.on('data', (data: Buffer) => {
      pending = Buffer.concat([pending, data]);
      const end = pending.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = pending.subarray(0, end).toString('latin1');
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
      if (pending.length < end + 4 + length) return;
      socket.removeAllListeners('data');
      const requestLine = head.split('\r\n')[0] ?? '';
      const answer = requestLine.startsWith('POST /ask ') ? this.answers.shift() : undefined;
      if (!answer) {
        this.unexpected.push(requestLine);
        socket.destroy();
        return;
      }
      void this.write(socket, answer);
    });
  }

  private async write(socket: Socket, answer: RawAnswer): Promise<void> {
    for (const piece of answer) {
      if (socket.destroyed) return;
      socket.write(piece);
      await new Promise((resolve) => setImmediate(resolve));
    }
    socket.end();
  }
}
