/**
 * Diagnostic: how fast a busy Node server takes new connections off the kernel's accept queue.
 *
 * An HTTP server whose event loop is kept busy (a timer burning BUSY_MS of CPU every millisecond, as a
 * loop relaying many streams is) receives CONNECTIONS connections opened all at once by another
 * process. The script prints how long the last `connection` event took, once with the loop busy and
 * once idle, and, for the busy loop, the most connections taken in one loop iteration (every busy
 * iteration runs the timer once).
 *
 * Node 20's libuv (1.46) accepts one connection per loop iteration (libuv pull request 3696), so a busy
 * loop takes one connection per iteration: the chat benchmark's first round opens 180 new connections
 * while the relay loop is busy. Node 20 has no `reusePort` listen option for several processes to share
 * the accepts; it came with Node 22.12 and 23.1.
 *
 * Run: `npx tsx tools/bench/chat/accept-queue.ts`.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { listen } from '../../../shared/lifecycle.js';
import { printLine } from '../report.js';

const CONNECTIONS = 100;
const BUSY_MS = 8;

/** Opens `count` connections to `port` at once, each sending one request; exits after `holdMs`. */
const CLIENT = `
const net = require('node:net');
const [port, count, holdMs] = process.argv.slice(1).map(Number);
for (let i = 0; i < count; i++) {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('connect', () => socket.write('GET / HTTP/1.1\\r\\nhost: bench\\r\\n\\r\\n'));
  socket.on('error', () => undefined);
}
setTimeout(() => process.exit(0), holdMs);
`;

interface Outcome {
  lastAcceptedMs: number;
  /** The most connections the server took in one loop iteration. */
  mostPerIteration: number;
}

async function measure(busyMs: number): Promise<Outcome> {
  const server = createServer((_req, res) => res.end('ok'));
  const accepted: number[] = [];
  const perIteration = new Map<number, number>();
  let iterations = 0;
  server.on('connection', () => {
    accepted.push(performance.now());
    perIteration.set(iterations, (perIteration.get(iterations) ?? 0) + 1);
  });
  const port = await listen(server, 0, '127.0.0.1');
  const loop = setInterval(() => {
    iterations++;
    const until = performance.now() + busyMs;
    while (performance.now() < until);
  }, 1);
  const started = performance.now();
  const client = spawn(process.execPath, ['-e', CLIENT, String(port), String(CONNECTIONS), '10000'], { stdio: 'ignore' });
  while (accepted.length < CONNECTIONS && performance.now() - started < 10_000) await new Promise((resolve) => setTimeout(resolve, 5));
  const lastAcceptedMs = (accepted[CONNECTIONS - 1] ?? Number.NaN) - started;
  clearInterval(loop);
  client.kill();
  await once(client, 'exit');
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return { lastAcceptedMs, mostPerIteration: Math.max(...perIteration.values()) };
}

const busy = await measure(BUSY_MS);
const idle = await measure(0);
printLine('connections opened at once', String(CONNECTIONS));
printLine(`busy loop (${BUSY_MS} ms of CPU per iteration): last connection accepted after (from starting the client)`, busy.lastAcceptedMs.toFixed(0), 'ms');
printLine('busy loop: most connections accepted in one iteration', String(busy.mostPerIteration));
printLine('idle loop: last connection accepted after (from starting the client)', idle.lastAcceptedMs.toFixed(0), 'ms');
