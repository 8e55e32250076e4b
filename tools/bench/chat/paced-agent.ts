/**
 * The benchmark's agent: a real HTTP server on 127.0.0.1 answering POST /ask with SSE like the contract,
 * `tokens` token events paced `intervalMs` apart (the first one at once), then a final event. Each
 * answer keeps its own phase, as independent model streams do: a 1 ms ticker writes whichever tokens
 * are due, so answers that started at different moments never emit in lockstep. It notes when it wrote
 * each token and the final event, keyed by the question, so the client can tell relay latency from
 * agent pacing.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { listen } from '../../../shared/lifecycle.js';

/** Milliseconds on a clock every process of this machine shares (wall clock, sub-microsecond). */
export const now = () => performance.timeOrigin + performance.now();

export interface AgentTimings {
  tokenSentAt: Float64Array;
  finalSentAt: number;
}

interface Streaming {
  res: ServerResponse;
  next: number;
  /** When the next token is due. */
  dueAt: number;
  timings: AgentTimings;
}

const TICK_MS = 1;

const CITATIONS = [{ chunk_id: 'bench-chunk', document_id: 'bench-doc', source: 'bench.md', section_path: ['Bench', 'Answer'] }];

export class PacedAgent {
  readonly timings = new Map<string, AgentTimings>();
  private readonly server: Server;
  private readonly streaming = new Set<Streaming>();
  private readonly tokens: number;
  private readonly intervalMs: number;
  private ticker: ReturnType<typeof setInterval> | undefined;
  private port = 0;

  constructor(options: { tokens: number; intervalMs: number }) {
    this.tokens = options.tokens;
    this.intervalMs = options.intervalMs;
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.keepAliveTimeout = 30_000;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    this.port = await listen(this.server, 0, '127.0.0.1');
    this.ticker = setInterval(() => this.tick(), TICK_MS);
  }

  async stop(): Promise<void> {
    clearInterval(this.ticker);
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.method !== 'POST' || req.url !== '/ask') {
      res.writeHead(500).end('unexpected call');
      return;
    }
    const { question } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { question: string };
    const timings: AgentTimings = { tokenSentAt: new Float64Array(this.tokens), finalSentAt: 0 };
    this.timings.set(question, timings);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const stream: Streaming = { res, next: 0, dueAt: now(), timings };
    this.write(stream);
    this.streaming.add(stream);
    res.on('close', () => this.streaming.delete(stream));
  }

  private tick(): void {
    const at = now();
    for (const stream of this.streaming) if (stream.dueAt <= at) this.write(stream);
  }

  private write(stream: Streaming): void {
    const { res, timings } = stream;
    stream.dueAt += this.intervalMs;
    if (stream.next < this.tokens) {
      timings.tokenSentAt[stream.next] = now();
      res.write(`data: {"type":"token","text":"word${stream.next} "}\n\n`);
      stream.next++;
      return;
    }
    timings.finalSentAt = now();
    res.end(`data: ${JSON.stringify({ type: 'final', citations: CITATIONS })}\n\n`);
    this.streaming.delete(stream);
  }
}
