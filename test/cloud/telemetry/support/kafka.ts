/**
 * Kafka helpers for tests on the stack's broker: unique topics, a collector that reads a topic from the
 * beginning, and a TCP proxy in front of the broker that a test cuts and restores to play an outage
 * without touching the shared broker.
 */
import net from 'node:net';
import { Kafka, logLevel, type ISocketFactory } from 'kafkajs';
import { stackEnv, uniqueName } from '../../../support/stack.js';

interface Tap {
  teardown(fn: () => unknown): void;
}

export { uniqueName };

export function stackBrokers(): string[] {
  return stackEnv().KAFKA_BROKERS.split(',');
}

/** A client straight to the broker. */
export function directKafka(clientId = 'telemetry-test'): Kafka {
  return new Kafka({ clientId, brokers: stackBrokers(), logLevel: logLevel.NOTHING });
}

export async function createTopics(t: Tap, topics: string[], partitions = 3): Promise<void> {
  const admin = directKafka().admin();
  await admin.connect();
  try {
    await admin.createTopics({ topics: topics.map((topic) => ({ topic, numPartitions: partitions, replicationFactor: 1 })), waitForLeaders: true });
  } finally {
    await admin.disconnect();
  }
  t.teardown(async () => {
    const cleaner = directKafka().admin();
    await cleaner.connect();
    await cleaner.deleteTopics({ topics, timeout: 5000 }).catch(() => undefined);
    await cleaner.disconnect();
  });
}

export interface Collected {
  key: string;
  value: Record<string, unknown>;
  partition: number;
}

/** Reads a topic from the beginning with a group of its own; `messages` fills as they arrive. */
export async function collect(t: Tap, topic: string): Promise<Collected[]> {
  const consumer = directKafka().consumer({ groupId: uniqueName('collector') });
  const messages: Collected[] = [];
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message, partition }) => {
      messages.push({ key: message.key?.toString() ?? '', value: JSON.parse(message.value?.toString() ?? 'null'), partition });
    },
  });
  t.teardown(() => consumer.disconnect());
  return messages;
}

/** Sends JSON values (or raw strings) to a topic. */
export async function produce(topic: string, values: unknown[]): Promise<void> {
  const producer = directKafka().producer();
  await producer.connect();
  try {
    await producer.send({ topic, messages: values.map((v) => ({ value: typeof v === 'string' ? v : JSON.stringify(v) })) });
  } finally {
    await producer.disconnect();
  }
}

export interface TcpProxy {
  port: number;
  /** A kafkajs socket factory that sends every broker connection through the proxy. */
  socketFactory: ISocketFactory;
  /** Stops listening and breaks every open connection: the broker is "down". */
  cut(): Promise<void>;
  /** Listens again on the same port: the broker is back. */
  restore(): Promise<void>;
}

/**
 * A proxy on 127.0.0.1 in front of the broker. It starts cut (nothing listens on its port), so a client
 * pointed at it first meets an outage.
 */
export async function startTcpProxy(t: Tap, target: string): Promise<TcpProxy> {
  const [host, portText] = target.split(':');
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(portText), host);
    sockets.add(client);
    sockets.add(upstream);
    client.pipe(upstream).pipe(client);
    const close = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
  });
  // Reserve a free port, then release it: the proxy starts cut.
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const cut = async () => {
    for (const s of sockets) s.destroy();
    sockets.clear();
    if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  await cut();
  t.teardown(cut);
  return {
    port,
    socketFactory: ({ onConnect }) => {
      const socket = net.connect({ host: '127.0.0.1', port }, onConnect);
      socket.setKeepAlive(true, 60_000);
      return socket;
    },
    cut,
    restore: () => new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    }),
  };
}
