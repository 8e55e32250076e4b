/**
 * A join the broker refuses leaves the alert consumer not running: kafkajs's `run` resolves all the
 * same once its crash was handled, and the service used to take that for a joined consumer, logging
 * "alert consumer running" and reporting `running` while nothing consumed.
 *
 * The refusal is the real broker's: the group's only member supports none of the partition assignors
 * the service offers, so the service's JoinGroup is answered INCONSISTENT_GROUP_PROTOCOL.
 */
import t from 'tap';
import { PartitionAssigners, type PartitionAssigner } from 'kafkajs';
import { recordingConsumer } from './support/recording-consumer.js';
import { freshTopic, kafka, uniqueName, waitFor } from './support/stack.js';

/** kafkajs's round robin under another name: a protocol the service's consumer does not offer. */
const otherAssigner: PartitionAssigner = (config) => ({ ...PartitionAssigners.roundRobin(config), name: 'OtherAssigner' });

t.test('a JoinGroup the broker refuses: logged as a crash, and the consumer is not running', async (t) => {
  const { topic, admin } = await freshTopic(t, 'alerts', 1);
  const groupId = uniqueName('alerts');
  const member = kafka().consumer({ groupId, partitionAssigners: [otherAssigner] });
  t.teardown(() => member.disconnect());
  await member.connect();
  await member.subscribe({ topic, fromBeginning: true });
  await member.run({ eachBatch: async () => undefined });
  await waitFor('the other member to be in the group', async () => (await admin.describeGroups([groupId])).groups[0]?.state === 'Stable', 60_000);

  // No second attempt during the test: the first one's outcome is what is asserted.
  const { consumer, lines } = recordingConsumer(t, { topic, groupId, reconnectMs: 600_000 });
  await consumer.start();

  t.ok(
    lines.some((l) => l.msg === 'alert consumer crashed; reconnecting'),
    'the refused join is logged as a crash, with the next attempt announced',
  );
  t.equal(consumer.running, false, 'the consumer is not reported running');
  t.same(
    lines.filter((l) => l.msg === 'alert consumer running'),
    [],
    '"alert consumer running" is not logged',
  );
});
