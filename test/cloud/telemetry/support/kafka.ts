/**
 * Kafka helpers for tests: unique topics and a collector that reads a topic from the beginning. They use
 * the stack's broker unless given other brokers (a test's own broker, see test/support/peers/kafka.ts).
 */
import '../../../../shared/kafkajs-idle-loop.js';
import { Kafka, logLevel } from 'kafkajs';
import { stackEnv, uniqueName } from '../../../support/stack.js';

interface Tap {
  teardown(fn: () => unknown): void;
}

export { uniqueName };

export function stackBrokers(): string[] {
  return stackEnv().KAFKA_BROKERS.split(',');
}

/** A client straight to the broker. */
export function directKafka(clientId = 'telemetry-test', brokers = stackBrokers()): Kafka {
  return new Kafka({ clientId, brokers, logLevel: logLevel.NOTHING });
}

export async function createTopics(t: Tap, topics: string[], partitions = 3, brokers = stackBrokers()): Promise<void> {
  const admin = directKafka('telemetry-test', brokers).admin();
  await admin.connect();
  try {
    await admin.createTopics({ topics: topics.map((topic) => ({ topic, numPartitions: partitions, replicationFactor: 1 })), waitForLeaders: true });
  } finally {
    await admin.disconnect();
  }
  t.teardown(async () => {
    const cleaner = directKafka('telemetry-test', brokers).admin();
    await cleaner.connect();
    await cleaner.deleteTopics({ topics, timeout: 5000 }).catch(() => undefined);
    await cleaner.disconnect();
  });
}

/**
 * At teardown, deletes the topics named `prefix…`: those a service process started by the test
 * created on the shared broker (its registrations consumer's subscription auto-creates its topic).
 */
export function deleteTopicsAtTeardown(t: Tap, prefix: string, brokers = stackBrokers()): void {
  t.teardown(async () => {
    const admin = directKafka('telemetry-test', brokers).admin();
    await admin.connect();
    const existing = await admin.listTopics();
    await admin.deleteTopics({ topics: existing.filter((name) => name.startsWith(prefix)), timeout: 5000 }).catch(() => undefined);
    await admin.disconnect();
  });
}

export interface Collected {
  key: string;
  value: Record<string, unknown>;
  partition: number;
}

export interface Collector {
  /** Fills as messages arrive. */
  messages: Collected[];
  /** Leaves the group; also done at teardown. */
  stop(): Promise<void>;
}

/** Reads a topic from the beginning with a group of its own. */
export async function collect(t: Tap, topic: string, brokers = stackBrokers()): Promise<Collector> {
  // A short fetch wait, so that stop() does not sit out a 5 s long poll.
  const consumer = directKafka('telemetry-test', brokers).consumer({ groupId: uniqueName('collector'), maxWaitTimeInMs: 500 });
  const messages: Collected[] = [];
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message, partition }) => {
      messages.push({ key: message.key?.toString() ?? '', value: JSON.parse(message.value?.toString() ?? 'null'), partition });
    },
  });
  const stop = () => consumer.disconnect();
  t.teardown(stop);
  return { messages, stop };
}

/** Sends JSON values (or raw strings, or raw bytes) to a topic. */
export async function produce(topic: string, values: unknown[]): Promise<void> {
  const producer = directKafka().producer();
  await producer.connect();
  try {
    await producer.send({ topic, messages: values.map((v) => ({ value: typeof v === 'string' || Buffer.isBuffer(v) ? v : JSON.stringify(v) })) });
  } finally {
    await producer.disconnect();
  }
}
