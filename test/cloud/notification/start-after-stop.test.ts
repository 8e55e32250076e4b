/**
 * A start that comes after the stop: the service's start can go on after its stop began (a step it was
 * awaiting finished meanwhile), and a consumer started then would join the group while the process
 * exits, leaving a member that never leaves. Once stopped, the alert consumer is never started again.
 * On the real broker.
 */
import t from 'tap';
import { recordingConsumer } from './support/recording-consumer.js';
import { freshTopic, producer, uniqueName } from './support/stack.js';

t.test('start after stop does nothing: the consumer joins no group and reads nothing', async (t) => {
  const { topic, admin } = await freshTopic(t, 'alerts', 1);
  const groupId = uniqueName('alerts');
  const p = await producer(t);
  await p.send({ topic, messages: [{ value: 'waiting' }] });
  const { consumer, settled } = recordingConsumer(t, { topic, groupId });

  t.equal(await consumer.stop(), true, 'the stop, coming first, finishes');
  await consumer.start();
  t.equal(consumer.running, false, 'the start after it left the consumer stopped');
  const [group] = (await admin.describeGroups([groupId])).groups;
  t.same(group?.members ?? [], [], 'no member joined the group');
  t.same(settled, [], 'nothing was read');
});
