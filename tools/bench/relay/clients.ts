/**
 * The client side of the relay benchmark, run as a child process so it does not share an event loop
 * with the servers. It opens N websocket clients, puts each in its building room, and measures
 * publish→receive latency from the timestamp carried in every reading.
 *
 * The same `ws` client code serves both servers, so the comparison measures the servers: for the relay
 * it speaks the Engine.IO v4 / Socket.IO v5 framing on the websocket transport (open, namespace connect,
 * subscribe_building with its acknowledgement, ping/pong, event frames), for the bare server it reads
 * raw frames.
 */
import { WebSocket } from 'ws';

export type ServerKind = 'relay' | 'bare';

export type Command =
  | { cmd: 'connect'; kind: ServerKind; url: string; clients: number; rooms: number; claims: string; buildingPrefix: string }
  | { cmd: 'reset' }
  | { cmd: 'report' }
  | { cmd: 'disconnect' };

export type Reply =
  | { type: 'connected'; clients: number }
  | { type: 'progress'; delivered: number }
  | { type: 'report'; delivered: number; lastDeliveryAt: number; p50: number; p99: number; max: number }
  | { type: 'disconnected' }
  | { type: 'error'; message: string };

/**
 * Sends to the benchmark, and drops what can no longer reach it: a benchmark that failed exits at once,
 * and a progress report sent after that must not end this process with an EPIPE stack on the shared
 * stderr, above the benchmark's own message.
 */
const send = (reply: Reply) => {
  if (process.connected) process.send?.(reply, undefined, {}, () => undefined);
};
const now = () => performance.timeOrigin + performance.now();

let sockets: WebSocket[] = [];
let delivered = 0;
/** When the latest delivery since the last reset arrived, on the clock readings carry (`t`). */
let lastDeliveryAt = 0;
let latencies = new Float64Array(4_000_000);
let samples = 0;

function record(sentAt: unknown): void {
  delivered++;
  lastDeliveryAt = now();
  if (typeof sentAt === 'number' && samples < latencies.length) latencies[samples++] = lastDeliveryAt - sentAt;
}

function connectRelayClient(url: string, claims: string, buildingId: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/socket.io/?EIO=4&transport=websocket`, {
      headers: { 'x-gateway-claims': claims },
      perMessageDeflate: false,
    });
    ws.on('error', reject);
    ws.on('message', (data: Buffer) => {
      const text = data.toString('utf8');
      if (text.startsWith('42')) {
        const [, reading] = JSON.parse(text.slice(2)) as [string, { t?: number }];
        record(reading.t);
      } else if (text === '2') {
        ws.send('3');
      } else if (text.startsWith('0')) {
        ws.send('40');
      } else if (text.startsWith('40')) {
        ws.send(`420${JSON.stringify(['subscribe_building', buildingId])}`);
      } else if (text.startsWith('430')) {
        const [ack] = JSON.parse(text.slice(3)) as [{ subscribed: boolean; reason?: string }];
        if (ack.subscribed) resolve(ws);
        else reject(new Error(`subscribe refused: ${ack.reason}`));
      } else if (text.startsWith('44')) {
        reject(new Error(`connect_error ${text.slice(2)}`));
      }
    });
  });
}

function connectBareClient(url: string, buildingId: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/?building=${encodeURIComponent(buildingId)}`, { perMessageDeflate: false });
    ws.on('error', reject);
    ws.on('open', () => resolve(ws));
    ws.on('message', (data: Buffer) => {
      const reading = JSON.parse(data.toString('utf8')) as { t?: number };
      record(reading.t);
    });
  });
}

async function connectAll(command: Extract<Command, { cmd: 'connect' }>): Promise<void> {
  const batch = 100;
  for (let i = 0; i < command.clients; i += batch) {
    const opened = await Promise.all(
      Array.from({ length: Math.min(batch, command.clients - i) }, (_, k) => {
        const buildingId = `${command.buildingPrefix}${(i + k) % command.rooms}`;
        return command.kind === 'relay' ? connectRelayClient(command.url, command.claims, buildingId) : connectBareClient(command.url, buildingId);
      }),
    );
    sockets.push(...opened);
  }
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? NaN;
}

const progress = setInterval(() => send({ type: 'progress', delivered }), 10);

process.on('message', (command: Command) => {
  void (async () => {
    try {
      switch (command.cmd) {
        case 'connect':
          await connectAll(command);
          send({ type: 'connected', clients: sockets.length });
          return;
        case 'reset':
          delivered = 0;
          lastDeliveryAt = 0;
          samples = 0;
          return;
        case 'report': {
          const sorted = latencies.slice(0, samples).sort();
          send({ type: 'report', delivered, lastDeliveryAt, p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), max: percentile(sorted, 1) });
          return;
        }
        case 'disconnect':
          await Promise.all(
            sockets.map(
              (ws) =>
                new Promise<void>((resolve) => {
                  ws.once('close', () => resolve());
                  ws.terminate();
                }),
            ),
          );
          sockets = [];
          send({ type: 'disconnected' });
          return;
      }
    } catch (err) {
      send({ type: 'error', message: (err as Error).message });
    }
  })();
});

process.on('disconnect', () => {
  clearInterval(progress);
  for (const ws of sockets) ws.terminate();
  latencies = new Float64Array(0);
  process.exit(0);
});
