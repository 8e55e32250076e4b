/**
 * Records whose names do not survive the trip to Redis and back are malformed, as telemetry's ingest
 * would refuse them: bytes that are not UTF-8 (decoded, they become U+FFFD) and JSON escapes of a lone
 * surrogate (encoded for Redis, they become U+FFFD too). Taken as alerts, `b\udc00` and `b\udfff` armed
 * one cooldown key, so one building's alert suppressed the other's, and a corrupted building id was
 * looked up in the directory. Real Kafka, Redis and FerretDB; the partition goes on past them.
 */
import { isUtf8 } from 'node:buffer';
import t from 'tap';
import { ALERT_OUTCOMES } from '../../../cloud/notification/metrics.js';
import { startFakeDirectory } from './support/fake-directory.js';
import { counterValue, startHarness, type Harness } from './support/harness.js';
import { channelRecorder, freshTopic, producer, uniqueName, waitFor } from './support/stack.js';

/** Covers a consumer group joining on a loaded machine; asserts nothing about speed. */
const SETTLED_WITHIN_MS = 90_000;

const directory = await startFakeDirectory(t);

async function consumed(h: Harness): Promise<Record<string, number>> {
  const totals: Record<string, number> = {};
  for (const outcome of ALERT_OUTCOMES) totals[outcome] = await counterValue(h.metrics, 'notification_alerts_consumed_total', { outcome });
  return totals;
}

const sum = (totals: Record<string, number>) => Object.values(totals).reduce((a, b) => a + b, 0);

function alertJson(buildingId: string, roomId: string): string {
  return JSON.stringify({ alertId: uniqueName('alert'), type: 'temperature', field: 'temperature', buildingId, roomId });
}

t.test('names that are not UTF-8, or hold a lone surrogate, are malformed; the partition goes on', async (t) => {
  const h = await startHarness(t, { directory });
  const channel = await channelRecorder(t, h.channel);
  const building = uniqueName('b');
  directory.set(building, [uniqueName('acme')]);
  // One byte no UTF-8 text holds, inside the building id: `"<building>-<0xff>"`.
  const [head, tail] = alertJson('BUILDING', 'r1').split('BUILDING') as [string, string];
  const notUtf8 = Buffer.concat([Buffer.from(`${head}${building}-`), Buffer.from([0xff]), Buffer.from(tail)]);
  t.notOk(isUtf8(notUtf8), 'the first record is not UTF-8');
  const values: Buffer[] = [
    notUtf8,
    Buffer.from(alertJson(`${building}-\udc00`, 'r1')),
    Buffer.from(alertJson(`${building}-\udfff`, 'r1')),
    Buffer.from(alertJson(building, 'r1')),
  ];

  const { topic } = await freshTopic(t, 'alerts', 1);
  const p = await producer(t);
  await p.send({ topic, messages: values.map((value) => ({ value })) });
  await h.consumer({ topic, groupId: uniqueName('alerts') });

  await waitFor('every record settled', async () => sum(await consumed(h)) === values.length, SETTLED_WITHIN_MS);
  t.same(await consumed(h), { delivered: 1, suppressed: 0, unroutable: 0, unsupported_metric: 0, malformed: 3 }, 'the three poison records are malformed; the good one after them is delivered');
  await waitFor('the notification', () => channel.raw.length === 1);
  t.match(JSON.parse(channel.raw[0] as string), { buildingId: building, roomId: 'r1' });
  t.same(directory.unexpected, [], 'no corrupted building id was looked up');
});

t.test('the directory got no call it was not set up for', async (t) => {
  t.same(directory.unexpected, []);
});
