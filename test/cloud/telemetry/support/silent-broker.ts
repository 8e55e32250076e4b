/**
 * A Kafka broker address that accepts connections and never answers, as a blackholed broker (or one
 * whose advertised listener swallows requests) looks to a client: each connect attempt opens a socket
 * and then waits for its request timeout. It counts the connections still open, so a test can tell
 * whether the client closed what it opened. Not a fake broker: it speaks no protocol at all.
 */
import net from 'node:net';
import { listen } from '../../../../shared/lifecycle.js';

interface Tap {
  teardown(fn: () => unknown): void;
}

export interface SilentBroker {
  /** `127.0.0.1:<port>`, for a Kafka client's brokers. */
  broker: string;
  /** Connections accepted so far. */
  accepted(): number;
  /** Connections accepted and not yet closed by the client. */
  open(): number;
}

/** Closed at teardown, with any connection the client left open. */
export async function startSilentBroker(t: Tap): Promise<SilentBroker> {
  const sockets = new Set<net.Socket>();
  let accepted = 0;
  const server = net.createServer((socket) => {
    accepted += 1;
    sockets.add(socket);
    // Requests are read and dropped (unread data would also hold back the client's end), never answered.
    socket.resume();
    // The client ending its side is what closing the connection means here.
    socket.on('end', () => socket.destroy());
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  const port = await listen(server, 0, '127.0.0.1');
  t.teardown(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { broker: `127.0.0.1:${port}`, accepted: () => accepted, open: () => sockets.size };
}
