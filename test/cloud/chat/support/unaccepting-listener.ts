/**
 * An agent address that takes no connection in time. A port with no listener is refused at once on
 * loopback, so this is a real listener that never accepts, with its accept queue full: the kernel then
 * drops new SYNs and a connect hangs until the caller's own connect timeout. Node accepts every
 * connection its servers get, so the listener is a python3 child (`listen(0)`, never `accept()`).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';

type Teardown = { teardown(fn: () => unknown): void };

const LISTENER = [
  'import socket, sys',
  'listener = socket.socket()',
  "listener.bind(('127.0.0.1', 0))",
  'listener.listen(0)',
  'print(listener.getsockname()[1], flush=True)',
  'sys.stdin.read()',
].join('\n');

/** Connections that fill the queue; Linux keeps backlog + 1 of them, so one is enough with listen(0). */
const MOST_FILLERS = 8;

/** How long a connect may take before it counts as hanging. */
const HANG_MS = 250;

function connectOrHang(port: number): Promise<{ socket: Socket; connected: boolean }> {
  const socket = connect(port, '127.0.0.1');
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => resolve({ socket, connected: false }), HANG_MS);
    socket.once('connect', () => {
      clearTimeout(timer);
      resolve({ socket, connected: true });
    });
    socket.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

/**
 * `http://127.0.0.1:<port>` of a listener whose connects hang: its queue is filled with plain
 * connections until one no longer completes, which proves the hang on this machine. The child and the
 * connections are closed at teardown.
 */
export async function unacceptingUrl(t: Teardown): Promise<string> {
  const child = spawn('python3', ['-c', LISTENER], { stdio: ['pipe', 'pipe', 'inherit'] });
  const fillers: Socket[] = [];
  t.teardown(async () => {
    for (const socket of fillers) socket.destroy();
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill();
    await exited;
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('error', (err) => reject(new Error(`python3 could not start the unaccepting listener: ${err.message}`)));
    child.once('exit', (code) => reject(new Error(`the unaccepting listener exited with ${code} before giving its port`)));
    child.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString('utf8').trim())));
  });
  for (let i = 0; i < MOST_FILLERS; i++) {
    const { socket, connected } = await connectOrHang(port);
    fillers.push(socket);
    if (!connected) return `http://127.0.0.1:${port}`;
  }
  throw new Error(`${MOST_FILLERS} connections to a listener that never accepts all completed: this kernel does not drop SYNs on a full accept queue`);
}
