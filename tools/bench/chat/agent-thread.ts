/**
 * Runs the paced agent on a thread of its own, so its event loop answers the chat service as promptly
 * as a separate agent service would, whatever the load generator on the main thread is doing.
 */
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { PacedAgent, type AgentTimings } from './paced-agent.js';

type Request = { kind: 'timings' } | { kind: 'stop' };
type Reply = { kind: 'started'; url: string } | { kind: 'timings'; timings: Array<[string, AgentTimings]> } | { kind: 'stopped' };

/** The agent thread, seen from the main thread. */
export class AgentThread {
  private readonly worker: Worker;
  url = '';

  constructor(options: { tokens: number; intervalMs: number }) {
    // The thread runs this same TypeScript file, so it registers tsx's loader first, as the main
    // thread's `tsx` did; a worker does not inherit module hooks on Node 20.
    const bootstrap = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(import.meta.url)}); });`;
    this.worker = new Worker(bootstrap, { eval: true, workerData: options });
  }

  async start(): Promise<void> {
    const reply = await this.next();
    if (reply.kind !== 'started') throw new Error('agent thread did not start');
    this.url = reply.url;
  }

  /** What the agent wrote when, keyed by question. */
  async timings(): Promise<Map<string, AgentTimings>> {
    this.worker.postMessage({ kind: 'timings' } satisfies Request);
    const reply = await this.next();
    if (reply.kind !== 'timings') throw new Error('agent thread answered out of turn');
    return new Map(reply.timings);
  }

  async stop(): Promise<void> {
    this.worker.postMessage({ kind: 'stop' } satisfies Request);
    await this.next();
    await this.worker.terminate();
  }

  private next(): Promise<Reply> {
    return new Promise((resolve, reject) => {
      this.worker.once('message', resolve);
      this.worker.once('error', reject);
    });
  }
}

if (!isMainThread && parentPort) {
  const port = parentPort;
  const agent = new PacedAgent(workerData as { tokens: number; intervalMs: number });
  await agent.start();
  port.postMessage({ kind: 'started', url: agent.url } satisfies Reply);
  port.on('message', (request: Request) => {
    if (request.kind === 'timings') port.postMessage({ kind: 'timings', timings: [...agent.timings] } satisfies Reply);
    else void agent.stop().then(() => port.postMessage({ kind: 'stopped' } satisfies Reply));
  });
}
