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
  /**
   * Closes the connection. Waits for the sends still unanswered (kafkajs does), so a caller that gave
   * up on a send should not wait on this either; the connection is closed all the same.
   */
  disconnect(): Promise<void>;
}

/** A producer and the sends it has not settled yet. */
interface Connection {
  producer: Producer;
  sending: Set<Promise<void>>;
}

export function kafkaAlertSink(kafka: Kafka, topic = 'alerts'): AlertSink {
  let current: Connection | undefined;
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
      current = { producer: next, sending: new Set() };
    },
    async send(messages) {
      if (!current) throw new Error('alert producer is not connected');
      const { sending } = current;
      const sent = current.producer
        .send({
          topic,
          acks: -1,
          messages: messages.map((m) => ({ key: m.key, value: JSON.stringify(m.alert) })),
        })
        .then(() => undefined);
      sending.add(sent);
      const settled = () => void sending.delete(sent);
      sent.then(settled, settled);
      return sent;
    },
    async disconnect() {
      const closing = current;
      current = undefined;
      if (!closing) return;
      const { producer, sending } = closing;
      // A send the relay gave up on is still kafkajs's: its retries reconnect the producer this
      // disconnect closed (and may land it, a duplicate the consumers drop). Once it settles, landed
      // or failed after its retries, close what they opened, or each such send leaks a connection.
      if (sending.size > 0) {
        void Promise.allSettled(sending).then(() => producer.disconnect().catch(() => undefined));
      }
      await producer.disconnect();
    },
  };
}
