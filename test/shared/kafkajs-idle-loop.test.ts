/**
 * kafkajs's idle request-queue loop is stopped (shared/kafkajs-idle-loop.ts), against the stack's real
 * Kafka: an idle connection no longer re-checks its queue from a timer, and requests that have to wait
 * for a slot (one in flight at a time) still all go out and are answered.
 */
import { createRequire } from 'node:module';
import t from 'tap';
import { idleCheck, stopIdleRequestQueueLoop } from '../../shared/kafkajs-idle-loop.js';
import { Kafka, logLevel } from 'kafkajs';
import { createTopics, directKafka, stackBrokers, uniqueName } from '../cloud/telemetry/support/kafka.js';

const require = createRequire(import.meta.url);
const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as { prototype: { checkPendingRequests(): void } };

/** Counts the queue checks of every connection in this process. */
function countChecks(t: { teardown(fn: () => void): void }): { readonly count: number; reset(): void } {
  const check = RequestQueue.prototype.checkPendingRequests;
  let count = 0;
  RequestQueue.prototype.checkPendingRequests = function (this: unknown) {
    count += 1;
    check.call(this);
  };
  t.teardown(() => {
    RequestQueue.prototype.checkPendingRequests = check;
  });
  return {
    get count() {
      return count;
    },
    reset() {
      count = 0;
    },
  };
}

t.test('only a queue with nothing pending and no throttle skips its check', async (t) => {
  const now = 1_000_000;
  t.equal(idleCheck({ pending: [], throttledUntil: -1 }, now), true, 'idle and never throttled');
  t.equal(idleCheck({ pending: [], throttledUntil: now - 1 }, now), true, 'idle, the throttle over');
  t.equal(idleCheck({ pending: [{}], throttledUntil: -1 }, now), false, 'a request waits for a slot');
  t.equal(idleCheck({ pending: [], throttledUntil: now + 50 }, now), false, 'throttled by the broker');
  t.equal(stopIdleRequestQueueLoop(), true, 'this kafkajs is patched, once');
});

t.test('an idle producer connection makes no queue checks', async (t) => {
  const topic = uniqueName('idle-loop');
  await createTopics(t, [topic], 1);
  const checks = countChecks(t);
  const producer = directKafka('idle-loop-test').producer();
  await producer.connect();
  t.teardown(() => producer.disconnect());
  await producer.send({ topic, messages: [{ value: 'one' }] });
  checks.reset();
  // Without the fix the queue re-checks itself about 900 times a second from here on.
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.equal(checks.count, 0, 'no check while nothing is pending');
});

t.test('requests waiting for the one slot in flight all go out', async (t) => {
  const topic = uniqueName('idle-loop');
  await createTopics(t, [topic], 1);
  const kafka = new Kafka({ clientId: 'idle-loop-test', brokers: stackBrokers(), logLevel: logLevel.NOTHING });
  const producer = kafka.producer({ maxInFlightRequests: 1 });
  await producer.connect();
  t.teardown(() => producer.disconnect());
  const sent = await Promise.all(Array.from({ length: 20 }, (_, i) => producer.send({ topic, messages: [{ value: `m${i}` }] })));
  t.ok(sent.every((answer) => answer[0]?.errorCode === 0), 'every send acknowledged without error');
  const admin = kafka.admin();
  await admin.connect();
  t.teardown(() => admin.disconnect());
  const [offsets] = await admin.fetchTopicOffsets(topic);
  t.equal(offsets?.high, '20', 'the partition holds the 20 messages');
});
