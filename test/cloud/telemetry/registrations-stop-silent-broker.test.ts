/**
 * The registration consumer stops within its bound when the broker goes silent under it (a partition,
 * a frozen host): kafkajs disconnects only once the fetch in flight returns, which from a silent broker
 * takes its request timeout (30 s), far past the service's 5 s stop deadline. The stack's broker, behind
 * a proxy frozen once the consumer has applied a registration; the store is PostgreSQL.
 */
import '../../../shared/kafkajs-idle-loop.js';
import { Kafka, logLevel } from 'kafkajs';
import t from 'tap';
import { RegistrationConsumer } from '../../../cloud/telemetry/broker/registrations.js';
import { PgBuildingStore } from '../../../cloud/telemetry/store/buildings.js';
import { migratedPool } from './support/database.js';
import { until } from './support/harness.js';
import { createTopics, produce, stackBrokers, uniqueName } from './support/kafka.js';
import { startFreezableProxy } from './support/silent-broker.js';
import { capturedLogger } from '../../support/captured-logger.js';

t.test('a stop while the broker is frozen under a running consumer ends within its bound, and says why', async (t) => {
  const broker = stackBrokers()[0]!;
  const proxy = await startFreezableProxy(t, broker);
  const topic = uniqueName('registrations');
  await createTopics(t, [topic], 1);
  await produce(topic, [{ buildingId: uniqueName('b'), rooms: ['lab'], sensors: [], thresholds: {} }]);
  const pool = await migratedPool(t);
  const { logger, lines } = capturedLogger('registrations-test');
  const kafka = new Kafka({ clientId: 'registrations-stop', brokers: [broker], socketFactory: proxy.socketFactory, connectionTimeout: 1000, logLevel: logLevel.NOTHING });
  const consumer = new RegistrationConsumer({ kafka, store: new PgBuildingStore(pool), logger, topic, groupId: uniqueName('group'), disconnectWithinMs: 500 });
  await consumer.start();
  await until(async () => lines.some((l) => l.msg === 'building registered'), 60_000, 'the registration to be applied');

  proxy.freeze();
  await consumer.stop();
  t.ok(
    lines.some((l) => l.msg === 'the registration consumer did not disconnect in time; its uncommitted messages will be read again'),
    'the stop returned before kafkajs gave up on the frozen broker',
  );
});
