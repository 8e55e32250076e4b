/**
 * A fake question-answering agent: a real HTTP server on 127.0.0.1 that answers POST /ask with SSE the
 * way the contract says (`token` events, then `final` with citations). Each call consumes one script
 * queued with {@link FakeAgent.expect}; a call nobody scripted, or any other route, answers 500 and is
 * recorded in `unexpected`, which tests assert is empty.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { listen } from '../../../../shared/lifecycle.js';

export interface AgentScript {
  /** Tokens to stream, in order. */
  tokens?: string[];
  /** Tokens made from the question asked, when the order of calls is not known in advance. */
  tokensFor?: (question: string) => string[];
  /** Citations of the final event. `undefined`: the final event carries none. */
  citations?: unknown[];
  /** Pause between two tokens. */
  tokenDelayMs?: number;
  /** Answer with this status and a JSON body instead of a stream. */
  status?: number;
  /** After this many tokens, send `{"type":"error"}` and end. */
  failAfter?: number;
  /** After this many tokens, destroy the connection. */
  dropAfter?: number;
  /**
   * Before each token but the first, wait for this (called with the token's index): the test sets the
   * pace of the answer, for example a token once the browser has the one before.
   */
  beforeToken?: (index: number) => Promise<void>;
  /** After this many tokens, hold until `release` resolves (or forever, when it is absent: a stall). */
  holdAfter?: number;
  release?: Promise<void>;
  /**
   * After this many tokens, write `keepAlive` every `keepAliveEveryMs` and never finish: an agent that
   * keeps its answer open without answering.
   */
  keepAliveAfter?: number;
  /** Bytes written at each keep-alive; an SSE comment unless set. */
  keepAlive?: string;
  keepAliveEveryMs?: number;
  /** End the stream after the tokens without a final event. */
  omitFinal?: boolean;
  /** Raw `data:` payloads to send instead of tokens and final. */
  rawData?: string[];
  /** Wait for `release` before sending even the response headers. */
  holdHeaders?: boolean;
  /** Never send response headers (the connection stays open until the fake stops). */
  neverAnswer?: boolean;
  /** After the final event, wait this long before ending the response. */
  endAfterFinalMs?: number;
  /** Content type of the answer; text/event-stream unless set. */
  contentType?: string;
}

export interface RecordedCall {
  headers: IncomingMessage['headers'];
  body: unknown;
  /** Resolves when the fake finished (or abandoned) its answer. */
  finished: Promise<void>;
}

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class FakeAgent {
  readonly calls: RecordedCall[] = [];
  readonly unexpected: string[] = [];
  private readonly scripts: AgentScript[] = [];
  /** Connections the fake closed because they carried no request in time. */
  idleClosed = 0;
  private readonly server: Server;
  private port = 0;
  private readonly requestSockets = new Set<Socket>();
  private idleCloseMs: number | undefined;
  private callWaiters: Array<{ count: number; resolve: () => void; reject: (err: Error) => void }> = [];

  constructor() {
    this.server = createServer((req, res) => {
      this.requestSockets.add(req.socket);
      void this.handle(req, res);
    });
    this.server.on('connection', (socket: Socket) => {
      if (this.idleCloseMs === undefined) return;
      setTimeout(() => {
        if (this.requestSockets.has(socket) || socket.destroyed) return;
        this.idleClosed++;
        socket.end();
      }, this.idleCloseMs).unref();
    });
  }

  /** How many connections carried at least one request. */
  get connectionsUsed(): number {
    return this.requestSockets.size;
  }

  /** From now on, closes a connection that sent no request within `ms` (an agent with a short idle timeout). */
  closeIdleConnectionsAfter(ms: number): this {
    this.idleCloseMs = ms;
    return this;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Queues the answers of the next calls, in order. */
  expect(...scripts: AgentScript[]): this {
    this.scripts.push(...scripts);
    return this;
  }

  /**
   * Resolves once the fake has received its `count`-th scripted call (at once if it already has), for a
   * test that must act while an answer is under way; rejects at an unexpected call. It has no time limit
   * of its own: tap's timeout fails a test whose call never comes.
   */
  called(count: number): Promise<void> {
    if (this.calls.length >= count) return Promise.resolve();
    return new Promise<void>((resolve, reject) => this.callWaiters.push({ count, resolve, reject }));
  }

  /** Scripts queued and not yet called. */
  get pending(): number {
    return this.scripts.length;
  }

  /** Throws when the fake got a call nobody scripted, or a script was never asked for. */
  verify(): void {
    if (this.unexpected.length > 0) throw new Error(`the fake agent got unexpected calls: ${this.unexpected.join(' | ')}`);
    if (this.pending > 0) throw new Error(`${this.pending} scripted agent answers were never asked for`);
  }

  async start(): Promise<this> {
    this.port = await listen(this.server, 0, '127.0.0.1');
    return this;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    if (req.method !== 'POST' || req.url !== '/ask') {
      this.refuse(res, `${req.method} ${req.url}`);
      return;
    }
    const script = this.scripts.shift();
    if (!script) {
      this.refuse(res, `unscripted POST /ask ${text.slice(0, 200)}`);
      return;
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
    let done!: () => void;
    const finished = new Promise<void>((resolve) => {
      done = resolve;
    });
    this.calls.push({ headers: req.headers, body, finished });
    this.wakeCallWaiters();
    try {
      const question = (body as { question?: unknown } | null)?.question;
      await this.answer(script.tokensFor ? { ...script, tokens: script.tokensFor(String(question)) } : script, res);
    } finally {
      done();
    }
  }

  private wakeCallWaiters(): void {
    const due = this.callWaiters.filter((waiter) => waiter.count <= this.calls.length);
    this.callWaiters = this.callWaiters.filter((waiter) => waiter.count > this.calls.length);
    for (const waiter of due) waiter.resolve();
  }

  private refuse(res: ServerResponse, what: string): void {
    this.unexpected.push(what);
    const waiters = this.callWaiters;
    this.callWaiters = [];
    for (const waiter of waiters) waiter.reject(new Error(`the fake agent got an unexpected call while a test waited for call ${waiter.count}: ${what}`));
    res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: `fake agent: unexpected ${what}` }));
  }

  private async answer(script: AgentScript, res: ServerResponse): Promise<void> {
    if (script.neverAnswer) return;
    if (script.holdHeaders && script.release) await script.release;
    if (script.status !== undefined) {
      res.writeHead(script.status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'scripted failure' }));
      return;
    }
    res.writeHead(200, { 'content-type': script.contentType ?? 'text/event-stream', 'cache-control': 'no-cache' });
    res.flushHeaders();
    const send = (payload: unknown) => res.write(`data: ${typeof payload === 'string' ? payload : JSON.stringify(payload)}\n\n`);
    if (script.rawData) {
      for (const data of script.rawData) send(data);
      res.end();
      return;
    }
    const tokens = script.tokens ?? [];
    for (let i = 0; i <= tokens.length; i++) {
      if (res.destroyed) return;
      if (script.failAfter === i) {
        send({ type: 'error', message: 'scripted agent failure' });
        res.end();
        return;
      }
      if (script.dropAfter === i) {
        // Let the tokens already written leave first, then cut the connection mid-answer.
        await new Promise<void>((resolve) => res.write('', () => resolve()));
        res.socket?.destroy();
        return;
      }
      if (script.keepAliveAfter === i) {
        await this.keepAlive(res, script.keepAlive ?? ': keep-alive\n\n', script.keepAliveEveryMs ?? 50);
        return;
      }
      if (script.holdAfter === i) {
        if (!script.release) return; // a stall: the connection stays open until the fake stops
        await script.release;
      }
      const token = tokens[i];
      if (token === undefined) break;
      if (i > 0 && script.beforeToken) {
        await script.beforeToken(i);
        if (res.destroyed) return;
      }
      if (i > 0 && script.tokenDelayMs) await pause(script.tokenDelayMs);
      send({ type: 'token', text: token });
    }
    if (!script.omitFinal) send(script.citations === undefined ? { type: 'final' } : { type: 'final', citations: script.citations });
    if (script.endAfterFinalMs !== undefined) await pause(script.endAfterFinalMs);
    res.end();
  }

  /** Writes `bytes` every `everyMs` until the connection closes. */
  private async keepAlive(res: ServerResponse, bytes: string, everyMs: number): Promise<void> {
    while (!res.destroyed && !res.writableEnded && res.socket?.destroyed !== true) {
      res.write(bytes);
      await pause(everyMs);
    }
  }
}

/**
 * A started fake agent, stopped at teardown and then verified (see {@link FakeAgent.verify}). Start it
 * before anything else the test cleans up: tap runs teardowns last-registered first, so a failed
 * verification then skips no other cleanup.
 */
export async function startFakeAgent(t: { teardown(fn: () => unknown): void }): Promise<FakeAgent> {
  const agent = new FakeAgent();
  t.teardown(() => agent.verify());
  await agent.start();
  t.teardown(() => agent.stop());
  return agent;
}

/**
 * A loopback port where nothing listens, so connections are refused: the discard port, a fixed port
 * below 1024 that neither the stack nor any test binds. A port bound and then closed would not do:
 * another test file running meanwhile may be given it.
 */
export const REFUSING_PORT = 9;

/** An agent URL on {@link REFUSING_PORT}: an agent that refuses connections. */
export const REFUSING_URL = `http://127.0.0.1:${REFUSING_PORT}`;
