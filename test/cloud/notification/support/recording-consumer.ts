/**
 * The service's alert consumer on a topic of the test's, as `main.ts` makes it but settling every record
 * by noting its value: for the tests of the consumer's own life (start, stop, joins), not of the breach
 * path. Stopped at teardown.
 */
import { KafkaAlertConsumer } from '../../../../cloud/notification/kafka.js';
import { createMetrics } from '../../../../cloud/notification/metrics.js';
import { capturedLogger } from '../../../support/captured-logger.js';
import { STACK, type Teardown } from './stack.js';

export interface RecordingConsumerOptions {
  topic: string;
  groupId: string;
  clientId?: string;
  /** Default 1000 ms. */
  reconnectMs?: number;
}

export function recordingConsumer(t: Teardown, options: RecordingConsumerOptions) {
  const settled: string[] = [];
  const { logger, lines } = capturedLogger('notification');
  const consumer = new KafkaAlertConsumer({
    brokers: STACK.kafkaBrokers,
    topic: options.topic,
    groupId: options.groupId,
    ...(options.clientId === undefined ? {} : { clientId: options.clientId }),
    reconnectMs: options.reconnectMs ?? 1000,
    lagIntervalMs: 0,
    settle: async (records) => {
      settled.push(...records.map((r) => r.value?.toString() ?? ''));
      return { settled: records.length };
    },
    metrics: createMetrics({ defaults: false }),
    logger,
  });
  t.teardown(() => consumer.stop());
  return { consumer, settled, lines };
}
