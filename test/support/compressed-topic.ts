/**
 * A topic on the stack's Kafka whose records the broker stores compressed: its `compression.type`
 * makes the broker recompress whatever a producer sends, so a test reads batches of that codec without
 * producing them compressed itself.
 */
import type { Kafka } from 'kafkajs';

/** Creates `name` (one partition) with `compression.type` = `codec`; deleted at teardown. */
export async function compressedTopic(t: { teardown(fn: () => unknown): void }, kafka: Kafka, name: string, codec: string): Promise<string> {
  const admin = kafka.admin();
  await admin.connect();
  // Before the creation, so a creation that fails still lets the admin go.
  t.teardown(async () => {
    await admin.deleteTopics({ topics: [name] }).catch(() => undefined);
    await admin.disconnect();
  });
  await admin.createTopics({ topics: [{ topic: name, numPartitions: 1, replicationFactor: 1, configEntries: [{ name: 'compression.type', value: codec }] }], waitForLeaders: true });
  return name;
}
