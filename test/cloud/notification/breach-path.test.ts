/**
 * The breach path on real Kafka, Redis and FerretDB: the same alert 20 times across two service
 * instances in one consumer group is delivered once; every outcome is counted and settled (committed);
 * an unroutable or timed-out lookup publishes one unscoped notification with no push and still arms
 * the cooldown, and neither an empty nor a failed answer is cached; lookups carry the system identity;
 * a suppressed record is never looked up; an alertId is delivered once, even after its cooldown
 * expired; a record that could not be settled is read again; the lag gauge follows the group.
 */
import t from 'tap';
import { decodeClaims } from '../../../shared/claims.js';
import { parseNotification, type Notification } from '../../../shared/notification.js';
import { ALERT_OUTCOMES } from '../../../cloud/notification/metrics.js';
import type { Cooldown } from '../../../cloud/notification/redis.js';
import { startFakeDirectory } from './support/fake-directory.js';
import { call, claims, counterValue, startHarness, type Harness } from './support/harness.js';
import { startPushService } from './support/push-service.js';
import { channelRecorder, freshTopic, producer, redisClient, uniqueName, waitFor, type Teardown } from './support/stack.js';

/**
 * How long a wait for records to settle may last before the test gives up: it covers a consumer group
 * joining on a CI machine running every suite at once, and asserts nothing about speed.
 */
const SETTLED_WITHIN_MS = 90_000;

const directory = await startFakeDirectory(t);
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

/** The claims of every directory call for a building, decoded. */
function lookupClaims(buildingId: string): unknown[] {
  return directory.calls.filter((c) => c.buildingId === buildingId).map((c) => decodeClaims(c.claims));
}

const SYSTEM_IDENTITY = { ok: true, claims: { sub: 'system:notification-service', memberships: [] } };

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

  await waitFor('20 records settled', async () => sum(await consumed(first, second)) === 20, SETTLED_WITHIN_MS);
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
  t.equal(await redis.get(`${first.keyPrefix}alert:temperature:temperature:${building}:r1`), '1', 'the cooldown key holds 1, as the seed fixes it');
  t.same(lookupClaims(building), [SYSTEM_IDENTITY], 'looked up once, with the system identity and no memberships');
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

  await waitFor('every record settled', async () => sum(await consumed(h)) === values.length, SETTLED_WITHIN_MS);
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

  t.equal(await counterValue(h.metrics, 'notification_directory_failures_total', { code: 'bad_status' }), 1, 'the lookup answered 500');
  t.equal(directory.callsFor(routed), 1, 'the routed building was looked up once, then cached');
  t.equal(directory.callsFor(empty), 1, 'the repeat alert of the empty building was suppressed before any lookup');
  for (const building of [routed, empty, hanging, failing]) t.same(lookupClaims(building), [SYSTEM_IDENTITY], `${building} looked up with the system identity`);

  // The empty and the failed building now answer domains: a new alert of each (another room, so another
  // cooldown key) is looked up again and delivered, so neither earlier answer was cached.
  directory.set(empty, [acme]).set(failing, [acme]);
  await produce(t, topic, [{ partition: 0, value: alert(empty, 'r2') }, { partition: 1, value: alert(failing, 'r2') }]);
  await waitFor('the two new records settled', async () => sum(await consumed(h)) === values.length + 2, SETTLED_WITHIN_MS);
  t.same(await consumed(h), { delivered: 4, suppressed: 1, unroutable: 3, unsupported_metric: 2, malformed: 5 }, 'both delivered, not unroutable');
  t.equal(directory.callsFor(empty), 2, 'the empty answer was not cached');
  t.equal(directory.callsFor(failing), 2, 'the failed answer was not cached');
  await waitFor('their notifications', () => channel.raw.length >= 9);
  t.same(
    notifications(channel.raw)
      .filter((n) => n.roomId === 'r2' && n.metric === 'temperature')
      .map((n) => [n.buildingId, n.domainName])
      .sort(),
    [[empty, acme], [failing, acme]].sort(),
    'each scoped to the domain the directory now answers',
  );

  await waitFor('offsets committed for every settled record', async () => (await consumer.refreshLag()) === 0, 15_000);
  t.equal(await counterValue(h.metrics, 'notification_kafka_consumer_lag_total', { topic }), 0);
});

t.test('a suppressed record is never looked up: a failing directory is neither called nor counted', async (t) => {
  const h = await startHarness(t, { directory });
  const building = uniqueName('b-down');
  directory.set(building, { status: 500 });
  // Another replica armed r1's cooldown; r2's alertId was already seen.
  await redis.set(`${h.keyPrefix}alert:temperature:temperature:${building}:r1`, '1', 'EX', 300);
  const seen = uniqueName('alert');
  await redis.set(`${h.keyPrefix}alert-seen:${seen}`, '1', 'EX', 300);
  t.equal(await h.breach.handle(Buffer.from(alert(building, 'r1'))), 'suppressed', 'the cooldown was armed');
  t.equal(await h.breach.handle(Buffer.from(alert(building, 'r2', { alertId: seen }))), 'suppressed', 'the alertId was seen');
  t.equal(directory.callsFor(building), 0, 'no directory call');
  const failures = await h.metrics.registry.getSingleMetric('notification_directory_failures_total')?.get();
  t.same(failures?.values.filter((v) => v.value > 0), [], 'no directory failure counted');
  t.equal(await redis.exists(`${h.keyPrefix}alert:temperature:temperature:${building}:r2`), 0, 'the duplicate did not arm its cooldown');
});

t.test('an alertId is delivered once across replicas, even after its cooldown expired', async (t) => {
  const first = await startHarness(t, { directory });
  const second = await startHarness(t, { directory, vapid: first.vapid, shared: { db: first.db, channel: first.channel, keyPrefix: first.keyPrefix } });
  const channel = await channelRecorder(t, first.channel);
  const building = uniqueName('b');
  directory.set(building, [uniqueName('acme')]);
  const cooldownKey = `${first.keyPrefix}alert:temperature:temperature:${building}:r1`;
  const alertId = uniqueName('alert');
  const resent = Buffer.from(alert(building, 'r1', { alertId }));

  t.equal(await first.breach.handle(resent), 'delivered');
  const seenTtl = await redis.ttl(`${first.keyPrefix}alert-seen:${alertId}`);
  t.ok(seenTtl > 24 * 3600 - 60 && seenTtl <= 24 * 3600, `the alertId is remembered for 24 h (ttl ${seenTtl})`);
  t.equal(await second.breach.handle(resent), 'suppressed', 'a resend on the other replica, within the cooldown');

  await redis.del(cooldownKey);
  t.equal(await second.breach.handle(resent), 'suppressed', 'a resend after the cooldown expired is still a duplicate');
  t.equal(await redis.exists(cooldownKey), 0, 'and it did not arm the cooldown');
  t.equal(await second.breach.handle(Buffer.from(alert(building, 'r1'))), 'delivered', 'while a new alertId for the same key is delivered: the key was free');
  t.equal(await first.breach.handle(Buffer.from(alert(building, 'r1'))), 'suppressed', 'and another new alertId within its cooldown is suppressed');
  t.equal(await redis.exists(cooldownKey), 1);

  const both = async (name: string, labels: Record<string, string>) => (await counterValue(first.metrics, name, labels)) + (await counterValue(second.metrics, name, labels));
  t.equal(await both('notification_inapp_published_total', { kind: 'alert' }), 2, 'two notifications published: one per delivered alertId');
  await waitFor('both on the channel', () => channel.raw.length === 2);
  t.same(await consumed(first, second), { delivered: 2, suppressed: 3, unroutable: 0, unsupported_metric: 0, malformed: 0 }, 'duplicates are counted as suppressed');
});

t.test('a record that could not be settled is not committed and is read again', async (t) => {
  let arms = 0;
  const flaky = (real: Cooldown): Cooldown => ({
    async armAll(keys) {
      arms += 1;
      if (arms === 1) throw Object.assign(new Error('connection lost'), { name: 'ConnectionError' });
      return real.armAll(keys);
    },
    forgetArmed: (key) => real.forgetArmed(key),
    armedHere: (key) => real.armedHere(key),
  });
  const h = await startHarness(t, { directory, cooldown: flaky });
  const channel = await channelRecorder(t, h.channel);
  const building = uniqueName('b');
  directory.set(building, [uniqueName('acme')]);
  const { topic } = await freshTopic(t, 'alerts', 1);
  await produce(t, topic, [{ value: alert(building, 'r1') }]);
  const consumer = await h.consumer({ topic, groupId: uniqueName('alerts') });
  await waitFor('the record delivered on a second read', async () => (await consumed(h)).delivered === 1, SETTLED_WITHIN_MS);
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
  await waitFor('7 records settled', async () => sum(await consumed(h)) === 7, SETTLED_WITHIN_MS);
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
