/**
 * A connect of the alert sink that fails closes the connections it opened. The relay tries again every
 * few seconds for as long as Kafka is unreachable, so a producer left behind by each failed attempt
 * would leak a socket per attempt for the whole outage.
 */
import '../../../shared/kafkajs-idle-loop.js';
import { Kafka, logLevel } from 'kafkajs';
import t from 'tap';
import { kafkaAlertSink } from '../../../cloud/telemetry/broker/kafka-alerts.js';
import { until } from './support/harness.js';
import { startSilentBroker } from './support/silent-broker.js';

t.test('failed connects to a broker that never answers leave no connection open', async (t) => {
  const silent = await startSilentBroker(t);
  // A short request timeout: each attempt gives up on the unanswered request quickly.
  const kafka = new Kafka({ clientId: 'telemetry-test', brokers: [silent.broker], requestTimeout: 300, logLevel: logLevel.NOTHING });
  const sink = kafkaAlertSink(kafka, 'alerts');
  await t.rejects(sink.connect(), 'the first attempt fails');
  await t.rejects(sink.connect(), 'so does the next');
  t.ok(silent.accepted() >= 2, 'each attempt opened a connection');
  await until(() => silent.open() === 0, 10_000, 'the failed attempts to close their connections');
  t.equal(silent.open(), 0, 'none is left open');
  await t.rejects(sink.send([]), /not connected/, 'and nothing is left half-connected to send with');
});
