import t from 'tap';
import { startFakeDirectory } from '../../support/fake-directory.js';
import { capturedLogger, claimsOf, connectClient, metric, notification, publisher, scrapeMetrics, startRelay, subscribe, uniqueName, waitFor } from './support/relay-harness.js';

t.test('notifications: scoped to the domain room, or broadcast without domainName; anything else is skipped and counted', async (t) => {
  const directory = await startFakeDirectory(t);
  const { logger, lines } = capturedLogger();
  const relay = await startRelay(t, { directory, logger });
  const redis = publisher(t);
  const acme = uniqueName('acme');
  const globex = uniqueName('globex');
  const ana = await connectClient(t, relay.url, claimsOf({ sub: 'ana', domains: [acme] }));
  const gus = await connectClient(t, relay.url, claimsOf({ sub: 'gus', domains: [globex] }));
  const nobody = await connectClient(t, relay.url, claimsOf({ sub: 'nobody', domains: [] }));

  const toAcme = notification({ id: 'to-acme', domainName: acme, roomId: 'r1', metric: 'co2', field: 'value' });
  const toAll = notification({ id: 'to-all', kind: 'manual', severity: 'info' });
  const payloads: string[] = [
    JSON.stringify(toAcme),
    JSON.stringify(toAll),
    // Renamed or foreign domain fields must never turn a scoped alert into a broadcast.
    JSON.stringify({ ...notification({ id: 'renamed' }), domain: acme }),
    JSON.stringify({ ...notification({ id: 'domain-id' }), domainId: 'x' }),
    JSON.stringify(notification({ id: 'empty-domain', domainName: '' })),
    JSON.stringify(notification({ id: 'bad-severity', severity: 'loud' })),
    JSON.stringify({ id: 'missing-fields', domainName: acme }),
    '{"id": "truncated',
    'not json at all',
    '[1,2,3]',
    'null',
    '',
  ];
  for (const p of payloads) await redis.publish(relay.channels.notifications, p);
  const fence = notification({ id: 'fence' });
  await redis.publish(relay.channels.notifications, JSON.stringify(fence));
  for (const client of [ana, gus, nobody]) {
    await waitFor(() => client.notifications.some((n) => (n as { id: string }).id === 'fence'), 'the fence');
  }
  t.same(ana.notifications, [toAcme, toAll, fence], 'the payload arrives as published');
  t.same(gus.notifications, [toAll, fence]);
  t.same(nobody.notifications, [toAll, fence]);

  const series = await scrapeMetrics(relay.url);
  t.equal(series.get('notifications_relayed_total{scope="domain"}'), 1);
  t.equal(series.get('notifications_relayed_total{scope="broadcast"}'), 2);
  t.equal(series.get('relay_messages_skipped_total{channel="notifications"}'), payloads.length - 2);
  const skipped = lines.filter((l) => l.msg === 'broker message skipped');
  t.equal(skipped.length, payloads.length - 2, 'each skipped message is logged');
  t.ok(
    skipped.every((l) => l.level === 40 && l.channel === relay.channels.notifications && typeof l.reason === 'string' && l.reason !== ''),
    'as a warning naming the channel and why',
  );
  t.match(skipped[0], { reason: 'domain: not a field of the notification schema' }, 'a renamed domain field is named as the reason');
  t.equal(series.get('relay_messages_skipped_total{channel="telemetry"}'), 0);
  const bytes = [...payloads, JSON.stringify(fence)].reduce((sum, p) => sum + Buffer.byteLength(p), 0);
  t.equal(series.get('relay_payload_bytes_total{channel="notifications"}'), bytes, 'every payload byte counted before fan-out');
  t.equal(series.get('relay_payload_bytes_total{channel="telemetry"}'), 0);
  t.equal(series.get('telemetry_relayed_total'), 0);
});

t.test('a notification published as a JSON string is skipped and counted, not parsed a second time', async (t) => {
  const directory = await startFakeDirectory(t);
  const { logger, lines } = capturedLogger();
  const relay = await startRelay(t, { directory, logger });
  const redis = publisher(t);
  const acme = uniqueName('acme');
  const ana = await connectClient(t, relay.url, claimsOf({ sub: 'ana', domains: [acme] }));

  // Valid notifications, each serialized twice: the payload is a JSON string, not an object.
  const wrapped = [notification({ id: 'wrapped-scoped', domainName: acme }), notification({ id: 'wrapped-broadcast' })].map((n) => JSON.stringify(JSON.stringify(n)));
  for (const payload of wrapped) await redis.publish(relay.channels.notifications, payload);
  const fence = notification({ id: 'fence' });
  await redis.publish(relay.channels.notifications, JSON.stringify(fence));
  await waitFor(() => ana.notifications.some((n) => (n as { id: string }).id === 'fence'), 'the fence');

  t.same(ana.notifications, [fence], 'neither wrapped notification reaches a socket');
  t.equal(await metric(relay.url, 'relay_messages_skipped_total{channel="notifications"}'), wrapped.length, 'both are counted as skipped');
  t.equal(await metric(relay.url, 'notifications_relayed_total{scope="domain"}'), 0, 'and not as relayed');
  t.match(
    lines.filter((l) => l.msg === 'broker message skipped'),
    wrapped.map(() => ({ channel: relay.channels.notifications, reason: 'payload is not a JSON object' })),
    'each is logged as not a JSON object',
  );
});

t.test('telemetry goes to building:{tail of the channel} only; non-JSON and non-object payloads are skipped', async (t) => {
  const directory = await startFakeDirectory(t);
  const { logger, lines } = capturedLogger();
  const relay = await startRelay(t, { directory, logger });
  const redis = publisher(t);
  const acme = uniqueName('acme');
  const b1 = uniqueName('b1');
  const b2 = uniqueName('b2');
  directory.set(b1, [acme]);
  directory.set(b2, [acme]);
  const watcherOfB1 = await connectClient(t, relay.url, claimsOf({ sub: 'w1', domains: [acme] }));
  const watcherOfB2 = await connectClient(t, relay.url, claimsOf({ sub: 'w2', domains: [acme] }));
  const memberOnly = await connectClient(t, relay.url, claimsOf({ sub: 'w3', domains: [acme] }));
  t.same(await subscribe(watcherOfB1, b1), { subscribed: true, buildingId: b1 });
  t.same(await subscribe(watcherOfB2, b2), { subscribed: true, buildingId: b2 });

  const reading = { type: 'co2', buildingId: b1, roomId: 'r1', value: 812.5, unit: 'ppm', timestamp: 1767225600000, nested: { ok: true } };
  const prefix = relay.channels.telemetryPrefix;
  const published: Array<[string, string]> = [
    [`${prefix}${b1}`, JSON.stringify(reading)],
    [`${prefix}${b1}`, 'not json'],
    [`${prefix}${b1}`, '[1]'],
    [`${prefix}${b1}`, '42'],
    [`${prefix}`, JSON.stringify({ no: 'building' })],
    [`${prefix}${b2}`, JSON.stringify({ building: 'b2' })],
  ];
  for (const [channel, payload] of published) await redis.publish(channel, payload);
  // A channel outside the prefix is not ours, even if it looks similar.
  await redis.publish(`${prefix.slice(0, -1)}x${b1}`, JSON.stringify({ foreign: true }));
  await redis.publish(relay.channels.notifications, JSON.stringify(notification({ id: 'fence', domainName: acme })));
  for (const client of [watcherOfB1, watcherOfB2, memberOnly]) await waitFor(() => client.notifications.length === 1, 'the fence');

  t.same(watcherOfB1.telemetry, [reading], 'the reading arrives as published');
  t.same(watcherOfB2.telemetry, [{ building: 'b2' }]);
  t.same(memberOnly.telemetry, [], 'a domain member who did not subscribe gets no telemetry');
  const series = await scrapeMetrics(relay.url);
  t.equal(series.get('telemetry_relayed_total'), 2);
  t.equal(series.get('relay_messages_skipped_total{channel="telemetry"}'), 4);
  t.same(
    lines.filter((l) => l.msg === 'broker message skipped').map((l) => l.reason),
    ['payload is not valid JSON', 'payload is not a JSON object', 'payload is not a JSON object', 'channel does not end in a valid building id'],
    'each skipped reading is logged with why',
  );
  const bytes = published.reduce((sum, [, p]) => sum + Buffer.byteLength(p), 0);
  t.equal(series.get('relay_payload_bytes_total{channel="telemetry"}'), bytes);
  t.equal(await metric(relay.url, 'notifications_relayed_total{scope="domain"}'), 1);
});
