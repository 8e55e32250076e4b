/**
 * The Kafka side of the alert relay: an idempotent producer on the `alerts` topic (an option, so tests
 * use their own), keyed `{buildingId}:{roomId}`.
 */
import '../../../shared/kafkajs-idle-loop.js';
import type { Kafka, Producer } from 'kafkajs';
import type { OutboxMessage } from '../store/outbox.js';

export interface AlertSink {
  connect(): Promise<void>;
  send(messages: readonly OutboxMessage[]): Promise<void>;
  disconnect(): Promise<void>;
}

export function kafkaAlertSink(kafka: Kafka, topic = 'alerts'): AlertSink {
  let producer: Producer | undefined;
  return {
    async connect() {
      // A new producer per connection: after an outage kafkajs starts from a clean state.
      const next = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: true, retry: { retries: 2, initialRetryTime: 200, maxRetryTime: 1000 } });
      try {
        await next.connect();
      } catch (err) {
        // A connect can fail with connections open (the seed broker answered, the broker it advertises
        // did not): close them, or the relay, retrying every few seconds, leaks a socket per attempt.
        await next.disconnect().catch(() => undefined);
        throw err;
      }
      producer = next;
    },
    async send(messages) {
      if (!producer) throw new Error('alert producer is not connected');
      await producer.send({
        topic,
        acks: -1,
        messages: messages.map((m) => ({ key: m.key, value: JSON.stringify(m.alert) })),
      });
    },
    async disconnect() {
      const current = producer;
      producer = undefined;
      await current?.disconnect();
    },
  };
}
