/**
 * A stop while the alert consumer's JoinGroup waits on a rebalance: once the join completes, the
 * consumer leaves the group, and it consumes nothing produced after the stop. kafkajs's disconnect of a
 * member still joining stopped nothing (its runner counts as running only once joined): the JoinGroup
 * was still answered and the member never left the group, which waited for its session to time out.
 *
 * The rebalance is held deterministically on the real broker: another member of the group holds a
 * batch in its handler without heartbeats, so the coordinator waits for it to rejoin before it
 * answers the new member's JoinGroup (as a production broker delays an empty group's first rebalance).
 */
import t from 'tap';
import type { Consumer } from 'kafkajs';
import { recordingConsumer } from './support/recording-consumer.js';
import { freshTopic, kafka, producer, uniqueName, waitFor, type Teardown } from './support/stack.js';

/** A plain member of the group that holds its first batch until released, and keeps every value it reads. */
async function holdingMember(t: Teardown, topic: string, groupId: string) {
  const consumer: Consumer = kafka().consumer({ groupId, maxWaitTimeInMs: 100 });
  t.teardown(() => consumer.disconnect());
  const values: string[] = [];
  let holding = false;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachBatch: async ({ batch }) => {
      values.push(...batch.messages.map((m) => m.value?.toString() ?? ''));
      holding = true;
      await released;
    },
  });
  return {
    values,
    get holding() {
      return holding;
    },
    release,
  };
}

t.test('stop while the JoinGroup waits on a rebalance: the member leaves the group and reads nothing produced after', async (t) => {
  const { topic, admin } = await freshTopic(t, 'alerts', 1);
  const groupId = uniqueName('alerts');
  const p = await producer(t);
  await p.send({ topic, messages: [{ value: 'before' }] });
  const other = await holdingMember(t, topic, groupId);
  await waitFor('the other member to hold its batch', () => other.holding, 60_000);

  const clientId = uniqueName('joining');
  const { consumer, settled } = recordingConsumer(t, { topic, groupId, clientId });
  const started = consumer.start();
  await waitFor(
    'the new member to be waiting in its JoinGroup',
    async () => (await admin.describeGroups([groupId])).groups[0]?.state === 'PreparingRebalance',
    60_000,
  );

  const stopping = consumer.stop();
  other.release();
  await started;
  t.equal(await stopping, true, 'the stop finished');
  t.equal(consumer.running, false, 'the consumer is not reported running');

  const [group] = (await admin.describeGroups([groupId])).groups;
  t.same(
    group?.members.filter((m) => m.clientId === clientId).map((m) => m.memberId),
    [],
    'the stopped member is not a member of the group',
  );
  await p.send({ topic, messages: [{ value: 'after' }] });
  await waitFor('the other member to read the record produced after the stop', () => other.values.includes('after'), 60_000);
  t.notOk(settled.includes('after'), 'the stopped member settled nothing produced after the stop');
});
