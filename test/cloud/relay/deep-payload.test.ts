import t from 'tap';
import { DEFAULT_CHANNELS, MAX_PAYLOAD_DEPTH, routeBrokerMessage } from '../../../cloud/relay/routing.js';
import { buildingOnRelay, connectClient, metric, subscribe, waitFor } from './support/relay-harness.js';

/** `{"a":[[…]]}` whose deepest array sits `depth` levels down, the outer object counting as one. */
function nested(depth: number): string {
  const arrays = depth - 1;
  return `{"a":${'['.repeat(arrays)}${']'.repeat(arrays)}}`;
}

t.test('a telemetry message nested 50,000 levels deep is skipped and counted, and the next one is still relayed', async (t) => {
  const { relay, lines, directory, redis, building, header } = await buildingOnRelay(t);
  const ana = await connectClient(t, relay.url, header);
  t.match(await subscribe(ana, building), { subscribed: true });

  const channel = `${relay.channels.telemetryPrefix}${building}`;
  const reading = { type: 'co2', buildingId: building, roomId: 'r1', co2: 600, timestamp: 1 };
  // It parses, but encoding it for the sockets recurses once per level and exhausts the stack.
  await redis.publish(channel, nested(50_000));
  await redis.publish(channel, JSON.stringify(reading));
  await waitFor(() => ana.telemetry.length === 1, 'the reading after the deep message');

  t.same(ana.telemetry, [reading], 'only the normal reading reaches the subscriber');
  t.equal(await metric(relay.url, 'relay_messages_skipped_total{channel="telemetry"}'), 1, 'the deep message is counted as skipped');
  t.equal(await metric(relay.url, 'telemetry_relayed_total'), 1, 'and not as relayed');
  t.match(
    lines.filter((l) => l.msg === 'broker message skipped'),
    [{ channel, reason: `payload nests deeper than ${MAX_PAYLOAD_DEPTH} levels` }],
    'it is logged as skipped, with why',
  );
  t.same(
    lines.filter((l) => l.msg === 'broker message handler failed'),
    [],
    'nothing fails in the handler',
  );
  t.same(directory.unexpected, []);
});

t.test(`payloads nested up to ${MAX_PAYLOAD_DEPTH} levels are routed; deeper ones are skipped, on either channel`, async (t) => {
  const channel = `${DEFAULT_CHANNELS.telemetryPrefix}b1`;
  t.match(routeBrokerMessage(channel, nested(MAX_PAYLOAD_DEPTH), DEFAULT_CHANNELS), { kind: 'telemetry', room: 'building:b1' });
  t.same(routeBrokerMessage(channel, nested(MAX_PAYLOAD_DEPTH + 1), DEFAULT_CHANNELS), {
    kind: 'skip',
    channel: 'telemetry',
    reason: `payload nests deeper than ${MAX_PAYLOAD_DEPTH} levels`,
  });
  const deepObjects = `${'{"a":'.repeat(MAX_PAYLOAD_DEPTH + 1)}1${'}'.repeat(MAX_PAYLOAD_DEPTH + 1)}`;
  t.match(routeBrokerMessage(channel, deepObjects, DEFAULT_CHANNELS), { kind: 'skip', reason: `payload nests deeper than ${MAX_PAYLOAD_DEPTH} levels` }, 'objects count as levels too');
  t.match(routeBrokerMessage(DEFAULT_CHANNELS.notifications, nested(50_000), DEFAULT_CHANNELS), {
    kind: 'skip',
    channel: 'notifications',
    reason: `payload nests deeper than ${MAX_PAYLOAD_DEPTH} levels`,
  });
  t.match(routeBrokerMessage(channel, '{"type":"co2","co2":600,"tags":[["a"],{"b":[]}]}', DEFAULT_CHANNELS), { kind: 'telemetry' }, 'a shallow mix of arrays and objects is fine');
});
