/**
 * Alerts stored Snappy-, LZ4- or ZSTD-compressed reach their notification. kafkajs decodes only gzip
 * by itself: any other batch failed the whole fetch, the consumer crashed, reconnected, fetched the
 * same offset and crashed again, and no alert was ever delivered. Java, Go and librdkafka producers
 * often compress, and a topic's `compression.type` makes the broker compress even uncompressed
 * records, as here: the test's producer sends plain records to topics set to each codec. Real Kafka,
 * Redis and FerretDB.
 */
import t from 'tap';
import { capturedLogger } from '../../support/captured-logger.js';
import { startFakeDirectory } from './support/fake-directory.js';
import { counterValue, startHarness, temperatureAlert } from './support/harness.js';
import { compressedTopic } from '../../support/compressed-topic.js';
import { channelRecorder, kafka, producer, uniqueName, waitFor } from './support/stack.js';

/** Covers a consumer group joining on a loaded machine; asserts nothing about speed. */
const SETTLED_WITHIN_MS = 90_000;

const directory = await startFakeDirectory(t);

for (const codec of ['snappy', 'lz4', 'zstd']) {
  t.test(`an alert the broker stored ${codec}-compressed is delivered, and the consumer does not crash`, async (t) => {
    const { logger, lines } = capturedLogger('notification');
    const h = await startHarness(t, { directory, logger });
    const channel = await channelRecorder(t, h.channel);
    const building = uniqueName('b');
    directory.set(building, [uniqueName('acme')]);
    const topic = await compressedTopic(t, kafka(), uniqueName(`alerts-${codec}`), codec);
    const p = await producer(t);
    await p.send({ topic, messages: [{ value: temperatureAlert(uniqueName('alert'), building, 'r1') }] });

    await h.consumer({ topic, groupId: uniqueName('alerts') });
    const crashes = () => lines.filter((line) => line.msg === 'alert consumer crashed; reconnecting').map((line) => line.error);
    const delivered = () => counterValue(h.metrics, 'notification_alerts_consumed_total', { outcome: 'delivered' });
    await waitFor('the alert to settle, or the consumer to crash', async () => crashes().length > 0 || (await delivered()) === 1, SETTLED_WITHIN_MS);
    t.same(crashes(), [], 'the consumer did not crash on the compressed batch');
    t.equal(await delivered(), 1, 'the alert was delivered');
    await waitFor('the notification', () => channel.raw.length === 1);
    t.match(JSON.parse(channel.raw[0] as string), { buildingId: building, roomId: 'r1' });
  });
}

t.test('the directory got no call it was not set up for', async (t) => {
  t.same(directory.unexpected, []);
});
