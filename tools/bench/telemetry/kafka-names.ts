/**
 * The Kafka topics and consumer group a benchmark's telemetry service uses: its own for each run, so
 * runs never read each other's records. The service subscribes to its registrations topic, and the
 * stack's broker creates topics on first use, so each run would leave a topic and a group behind;
 * `removeKafkaNames` deletes them once the service has stopped.
 */
import '../../../shared/kafkajs-idle-loop.js';
import { Kafka, logLevel } from 'kafkajs';

export interface BenchKafkaNames {
  alertsTopic: string;
  registrationsTopic: string;
  registrationsGroup: string;
}

export function benchKafkaNames(suffix: string): BenchKafkaNames {
  return { alertsTopic: `bench-alerts-${suffix}`, registrationsTopic: `bench-registrations-${suffix}`, registrationsGroup: `bench-${suffix}` };
}

/** The service's environment variables that rename its topics and group. */
export function kafkaNamesEnv(names: BenchKafkaNames): Record<string, string> {
  return { ALERTS_TOPIC: names.alertsTopic, REGISTRATIONS_TOPIC: names.registrationsTopic, REGISTRATIONS_GROUP: names.registrationsGroup };
}

/**
 * Deletes the run's topics and group that exist (the alerts topic only does if an alert was sent).
 * Call it after the service stopped: a group with a member left cannot be deleted. What cannot be
 * deleted is named on stderr, not thrown, so it never hides the benchmark's own outcome.
 */
export async function removeKafkaNames(brokers: readonly string[], names: BenchKafkaNames): Promise<void> {
  const admin = new Kafka({ clientId: `bench-cleanup-${names.registrationsGroup}`, brokers: [...brokers], logLevel: logLevel.NOTHING }).admin();
  try {
    await admin.connect();
    const topics = new Set(await admin.listTopics());
    const ours = [names.alertsTopic, names.registrationsTopic].filter((topic) => topics.has(topic));
    if (ours.length > 0) await admin.deleteTopics({ topics: ours });
    const { groups } = await admin.listGroups();
    if (groups.some((g) => g.groupId === names.registrationsGroup)) await admin.deleteGroups([names.registrationsGroup]);
  } catch (err) {
    const left = `${names.alertsTopic}, ${names.registrationsTopic} and group ${names.registrationsGroup}`;
    console.error(`bench: could not remove its Kafka topics and group (${left}): ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    await admin.disconnect();
  }
}
