/**
 * The breach path on real Kafka, Redis and FerretDB: the same alert 20 times across two service
 * instances in one consumer group is delivered once; every outcome is counted and settled (committed);
 * an unroutable or timed-out lookup publishes one unscoped notification with no push and still arms
 * the cooldown; a record that could not be settled is read again; the lag gauge follows the group.
 */
import t from 'tap';
import { parseNotification, type Notification } from '../../../shared/notification.js';
import { ALERT_OUTCOMES } from '../../../cloud/notification/metrics.js';
import type { Cooldown } from '../../../cloud/notification/redis.js';
import { FakeDirectory } from './support/fake-directory.js';
import { call, claims, counterValue, startHarness, type Harness } from './support/harness.js';
import { startPushService } from './support/push-service.js';
import { channelRecorder, freshTopic, producer, redisClient, uniqueName, waitFor, type Teardown } from './support/stack.js';

const directory = await new FakeDirectory().start();
t.teardown(() => directory.stop());
const push = await startPushService(t);
const redis = redisClient(t);

/** Produces to a topic created after any long-lived producer connected: a fresh producer sees it. */
async function produce(t: Teardown, topic: string, messages: Array<{ partition?: number; key?: string; value: string | null }>): Promise<void> {
  const p = await producer(t);
  await p.send({ topic, messages });
}

function alert(buildingId: string, roomId: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    alertId: uniqueName('alert'),
    type: 'temperature',
    field: 'temperature',
    buildingId,
    roomId,
    value: 31.5,
    bound: 'maxTemperature',
    threshold: 28,
    timestamp: Date.now(),
    ...extra,
  });
}

async function consumed(...instances: Harness[]): Promise<Record<string, number>> {
  const totals: Record<string, number> = {};
  for (const outcome of ALERT_OUTCOMES) {
    totals[outcome] = 0;
    for (const h of instances) totals[outcome] += await counterValue(h.metrics, 'notification_alerts_consumed_total', { outcome });
  }
  return totals;
}

const sum = (totals: Record<string, number>) => Object.values(totals).reduce((a, b) => a + b, 0);

function notifications(raw: string[]): Notification[] {
  return raw.map((r) => {
    const parsed = parseNotification(r);
    if (!parsed.ok) throw new Error(parsed.errors.join('; '));
    return parsed.notification;
  });
}

t.test('the same alert 20 times across two instances of one consumer group: delivered once', async (t) => {
  const first = await startHarness(t, { directory });
  const second = await startHarness(t, { directory, vapid: first.vapid, shared: { db: first.db, channel: first.channel, keyPrefix: first.keyPrefix } });
  const channel = await channelRecorder(t, first.channel);
  const acme = uniqueName('acme');
  const building = uniqueName('b');
  directory.set(building, [acme]);
  const ana = uniqueName('ana');
  const phone = await push.subscribe(first.vapid!.publicKey);
  const sub = await call(first.url, 'POST', '/subscribe', { claims: claims(`sub-${ana}`, ana, [{ domainName: acme, role: 'member' }]), body: { subscription: phone, domainName: acme } });
  t.equal(sub.status, 201);

  const { topic } = await freshTopic(t, 'alerts', 4);
  const groupId = uniqueName('alerts');
  await first.consumer({ topic, groupId });
  await second.consumer({ topic, groupId });
  const value = alert(building, 'r1');
  await produce(t, topic, Array.from({ length: 20 }, (_, i) => ({ partition: i % 4, key: `${building}:r1`, value })));

  await waitFor('20 records settled', async () => sum(await consumed(first, second)) === 20, 30_000);
  const totals = await consumed(first, second);
  t.equal(totals.delivered, 1, 'exactly one delivery');
  t.equal(totals.suppressed, 19, 'every other copy suppressed by the shared cooldown');
  t.ok(sum(await consumed(first)) > 0 && sum(await consumed(second)) > 0, 'both instances consumed part of the copies');

  await waitFor('the in-app notification', () => channel.raw.length >= 1);
  const [note] = notifications(channel.raw);
  t.match(note, { kind: 'alert', severity: 'warning', buildingId: building, roomId: 'r1', metric: 'temperature', field: 'temperature', domainName: acme });
  t.equal(note?.message, 'Maximum temperature exceeded in room r1 of building ' + building + ': 31.5 °C (limit 28 °C)');
  const pushed = await waitFor('the push', async () => {
    const messages = await push.messages(phone.clientHash);
    return messages.length > 0 ? messages : undefined;
  });
  t.equal(pushed.length, 1, 'one push');
  t.same(JSON.parse(pushed[0] ?? '{}'), note, 'the browser decrypts the same notification');
  await first.delivery.drain();
  await second.delivery.drain();
  t.equal((await push.messages(phone.clientHash)).length, 1, 'still one push once every fan-out finished');
  t.equal(channel.raw.length, 1, 'one notification for one domain');
  const ttl = await redis.ttl(`${first.keyPrefix}alert:temperature:temperature:${building}:r1`);
  t.ok(ttl > 0 && ttl <= 300, `cooldown key armed for at most 300 s (ttl ${ttl})`);
});

t.test('every outcome is counted and settled; failed lookups publish unscoped with no push; the consumer never crashes', async (t) => {
  const h = await startHarness(t, { directory });
  const channel = await channelRecorder(t, h.channel);
  const acme = uniqueName('acme');
  const routed = uniqueName('b-routed');
  const empty = uniqueName('b-empty');
  const hanging = uniqueName('b-hang');
  const failing = uniqueName('b-fail');
  directory.set(routed, [acme, uniqueName('other')]).set(empty, []).set(hanging, 'hang').set(failing, { status: 500 });
  const ana = uniqueName('ana');
  const phone = await push.subscribe(h.vapid!.publicKey);
  await call(h.url, 'POST', '/subscribe', { claims: claims(`sub-${ana}`, ana, [{ domainName: acme, role: 'member' }]), body: { subscription: phone, domainName: acme, types: ['peopleCount'] } });

  const { topic } = await freshTopic(t, 'alerts', 2);
  const values: Array<string | null> = [
    'not json',
    '[1,2]',
    JSON.stringify({ type: 'temperature', field: 'temperature', buildingId: routed }),
    JSON.stringify({ type: 'temperature', field: 'temperature', buildingId: routed, roomId: '' }),
    null,
    alert(routed, 'r1', { type: 'apClients', field: 'apClients' }),
    alert(routed, 'r1', { type: 'noSuchMetric' }),
    alert(empty, 'r1'),
    alert(hanging, 'r1'),
    alert(failing, 'r1'),
    alert(routed, 'r2', { type: 'peopleCount', field: 'peopleCount', value: 80, bound: 'maxPeople', threshold: 50 }),
    alert(routed, 'r3'),
    alert(empty, 'r1'),
  ];
  await produce(t, topic, values.map((value, i) => ({ partition: i % 2, value })));
  const consumer = await h.consumer({ topic, groupId: uniqueName('alerts') });

  await waitFor('every record settled', async () => sum(await consumed(h)) === values.length, 30_000);
  t.same(await consumed(h), { delivered: 2, suppressed: 1, unroutable: 3, unsupported_metric: 2, malformed: 5 });
  t.ok(consumer.running, 'the consumer is still running');

  await waitFor('the notifications', () => channel.raw.length >= 7);
  const notes = notifications(channel.raw);
  const unscoped = notes.filter((n) => n.domainName === undefined);
  t.same(unscoped.map((n) => n.buildingId).sort(), [empty, hanging, failing].sort(), 'one unscoped notification per unroutable alert');
  t.equal(notes.filter((n) => n.domainName !== undefined).length, 4, 'two delivered alerts, two domains each');
  const pushed = await waitFor('the push', async () => {
    const messages = (await push.messages(phone.clientHash)).map((m) => JSON.parse(m) as Notification);
    return messages.length > 0 ? messages : undefined;
  });
  await h.delivery.drain();
  t.equal((await push.messages(phone.clientHash)).length, 1, 'and no other push once every fan-out finished');
  t.same(pushed.map((n) => [n.metric, n.roomId, n.domainName]), [['peopleCount', 'r2', acme]], 'only the metric ana opted in to is pushed, and unroutable alerts never are');
  for (const building of [empty, hanging, failing]) {
    t.equal(await redis.exists(`${h.keyPrefix}alert:temperature:temperature:${building}:r1`), 1, `cooldown armed for the unroutable ${building}`);
  }
  t.equal(await counterValue(h.metrics, 'notification_directory_failures_total', { code: 'timeout' }), 1, 'the lookup that never answered timed out');

  await waitFor('offsets committed for every settled record', async () => (await consumer.refreshLag()) === 0, 15_000);
  t.equal(await counterValue(h.metrics, 'notification_kafka_consumer_lag_total', { topic }), 0);
  t.equal(directory.callsFor(routed), 1, 'the routed building was looked up once, then cached');
  t.equal(directory.callsFor(empty), 1, 'the empty answer was not cached, but its second alert was suppressed before any lookup');
});

t.test('a record that could not be settled is not committed and is read again', async (t) => {
  let arms = 0;
  const flaky = (real: Cooldown): Cooldown => ({
    async armAll(keys) {
      arms += 1;
      if (arms === 1) throw Object.assign(new Error('connection lost'), { name: 'ConnectionError' });
      return real.armAll(keys);
    },
    release: (key) => real.release(key),
    armedHere: (key) => real.armedHere(key),
  });
  const h = await startHarness(t, { directory, cooldown: flaky });
  const channel = await channelRecorder(t, h.channel);
  const building = uniqueName('b');
  directory.set(building, [uniqueName('acme')]);
  const { topic } = await freshTopic(t, 'alerts', 1);
  await produce(t, topic, [{ value: alert(building, 'r1') }]);
  const consumer = await h.consumer({ topic, groupId: uniqueName('alerts') });
  await waitFor('the record delivered on a second read', async () => (await consumed(h)).delivered === 1, 30_000);
  t.equal(arms, 2, 'read twice: the first attempt failed before settling');
  t.equal(sum(await consumed(h)), 1, 'the failed attempt was not counted as an outcome');
  await waitFor('the notification', () => channel.raw.length === 1);
  await waitFor('committed', async () => (await consumer.refreshLag()) === 0, 15_000);
});

t.test('the lag gauge counts records the group has not committed', async (t) => {
  const h = await startHarness(t, { directory });
  const building = uniqueName('b');
  directory.set(building, [uniqueName('acme')]);
  const { topic } = await freshTopic(t, 'alerts', 3);
  await produce(t, topic, Array.from({ length: 7 }, (_, i) => ({ partition: i % 3, value: alert(building, `r${i}`) })));
  const groupId = uniqueName('alerts');
  const consumer = await h.consumer({ topic, groupId });
  const before = await h.metrics.registry.getSingleMetric('notification_kafka_consumer_lag_total')?.get();
  t.ok(before, 'the gauge exists');
  await waitFor('7 records settled', async () => sum(await consumed(h)) === 7, 30_000);
  await waitFor('lag back to 0', async () => (await consumer.refreshLag()) === 0, 15_000);
  await produce(t, topic, [{ partition: 0, value: 'late and malformed' }]);
  await consumer.stop();
  const lag = await consumer.refreshLag();
  t.ok(lag <= 1, `at most the one late record is uncommitted (lag ${lag})`);
  t.equal(await counterValue(h.metrics, 'notification_kafka_consumer_lag_total', { topic }), lag);
});

t.test('the directory got no call it was not set up for', async (t) => {
  t.same(directory.unexpected, []);
});
