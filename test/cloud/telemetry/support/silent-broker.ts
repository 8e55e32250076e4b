/**
 * Kafka brokers that stop answering, as a blackholed broker (or one whose advertised listener swallows
 * requests) looks to a client. Neither is a fake broker: neither speaks any protocol itself.
 *
 * - startSilentBroker: an address that accepts connections and never answers. Each connect attempt
 *   opens a socket and then waits for its request timeout; it counts the connections still open, so a
 *   test can tell whether the client closed what it opened.
 * - startFreezableProxy: a TCP proxy in front of a real broker, for a client that must connect first
 *   and then find the broker gone silent under it (a partition, a balancer that blackholes); or, with
 *   `answerDelayMs`, a broker slow but working (a lagging in-sync follower, a loaded cluster), each of
 *   the real broker's answers held back that long and then delivered, in order.
 */
import net from 'node:net';
import type { ISocketFactory } from 'kafkajs';
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

export interface FreezableProxy {
  /**
   * For a kafkajs client's `socketFactory`: every connection it opens goes through the proxy, to the
   * seed broker and to the broker the metadata names alike (a proxy only in `brokers` would carry the
   * metadata request, and the produce requests would go straight to the advertised listener). Throws
   * for an address other than the proxied broker's: the proxy fronts one broker.
   */
  socketFactory: ISocketFactory;
  /**
   * From now on nothing passes, either way, on the connections open and on new ones: what the client
   * sends is read and dropped, answers already on their way are dropped too. Connections stay open.
   */
  freeze(): void;
  /** Bytes the client sent since the freeze, all dropped (a request that went into the silence). */
  swallowed(): number;
  /**
   * Closes every connection (after a partition heals, the connections it held are reset) and forwards
   * again on new ones.
   */
  heal(): void;
  /** Connections through the proxy that neither side has closed yet. */
  open(): number;
  /** Connections accepted so far: a client that replaces its producer opens new ones. */
  accepted(): number;
}

/**
 * A proxy to `broker` (`host:port`, advertised as itself); closed at teardown with its connections.
 * With `answerDelayMs`, the broker's bytes (and its closing) reach the client that long after they
 * arrive; what the client sends is forwarded at once.
 */
export async function startFreezableProxy(t: Tap, broker: string, options: { answerDelayMs?: number } = {}): Promise<FreezableProxy> {
  const [host = '', port = ''] = broker.split(':');
  const delayMs = options.answerDelayMs ?? 0;
  const pairs = new Set<{ client: net.Socket; upstream: net.Socket }>();
  let frozen = false;
  let swallowed = 0;
  let accepted = 0;
  // Timers of the same duration fire in the order they were set, so delayed answers keep their order.
  const later = (act: () => void): void => {
    if (delayMs > 0) setTimeout(act, delayMs);
    else act();
  };
  const server = net.createServer((client) => {
    accepted += 1;
    const upstream = net.connect(Number(port), host);
    const pair = { client, upstream };
    pairs.add(pair);
    client.on('data', (chunk: Buffer) => {
      if (frozen) swallowed += chunk.length;
      else upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) =>
      later(() => {
        if (!frozen && !client.destroyed) client.write(chunk);
      }),
    );
    const close = () => {
      client.destroy();
      upstream.destroy();
      pairs.delete(pair);
    };
    client.on('close', close).on('error', close);
    // The broker closing its side reaches the client after the answers held back before it.
    upstream.on('close', () => later(close)).on('error', close);
  });
  const proxyPort = await listen(server, 0, '127.0.0.1');
  t.teardown(async () => {
    for (const { client, upstream } of pairs) {
      client.destroy();
      upstream.destroy();
    }
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return {
    socketFactory: ({ host: wanted, port: wantedPort, onConnect }) => {
      if (`${wanted}:${wantedPort}` !== broker) throw new Error(`the proxy fronts ${broker} only; the client asked for ${wanted}:${wantedPort}`);
      return net.connect({ host: '127.0.0.1', port: proxyPort }, onConnect);
    },
    freeze() {
      frozen = true;
      swallowed = 0;
    },
    swallowed: () => swallowed,
    heal() {
      for (const { client, upstream } of pairs) {
        client.destroy();
        upstream.destroy();
      }
      frozen = false;
    },
    open: () => pairs.size,
    accepted: () => accepted,
  };
}
