import t from 'tap';
import { startFakeDirectory } from '../../support/fake-directory.js';
import { MAX_LOOKUPS_IN_FLIGHT, MAX_PENDING_SUBSCRIPTIONS } from '../../../cloud/relay/subscriptions.js';
import { capturedLogger, claimsOf, connectClient, metric, publisher, startRelay, subscribe, uniqueName, waitFor, type Client, type Teardown } from './support/relay-harness.js';

const FORBIDDEN = 'socket_subscriptions_rejected_total{reason="forbidden"}';
const LOOKUP_FAILED = 'socket_subscriptions_rejected_total{reason="lookup_failed"}';

async function setup(t: Teardown, options: { directoryTimeoutMs?: number } = {}) {
  const directory = await startFakeDirectory(t);
  const relay = await startRelay(t, { directory, ...options });
  const redis = publisher(t);
  const acme = uniqueName('acme');
  const header = claimsOf({ sub: uniqueName('ana'), domains: [acme] });
  const ana = await connectClient(t, relay.url, header);
  /** Publishes one reading per building, then waits for the fence building's reading to arrive. */
  async function readingsAfter(client: Client, buildings: string[], fenceBuilding: string): Promise<string[]> {
    const before = client.telemetry.length;
    for (const b of buildings) await redis.publish(`${relay.channels.telemetryPrefix}${b}`, JSON.stringify({ building: b, value: 1 }));
    await redis.publish(`${relay.channels.telemetryPrefix}${fenceBuilding}`, JSON.stringify({ building: fenceBuilding, fence: true }));
    await waitFor(() => client.telemetry.slice(before).some((r) => (r as { fence?: boolean }).fence), 'the fence reading');
    return client.telemetry.slice(before).map((r) => (r as { building: string }).building);
  }
  return { directory, relay, redis, acme, header, ana, readingsAfter };
}

t.test('the account holds one of the building domains: joined, acknowledged, and only that building is relayed', async (t) => {
  const { directory, relay, acme, header, ana, readingsAfter } = await setup(t);
  const mine = uniqueName('b-mine');
  const fence = uniqueName('b-fence');
  const theirs = uniqueName('b-theirs');
  directory.set(mine, [uniqueName('other'), acme]);
  directory.set(fence, [acme]);
  directory.set(theirs, [uniqueName('globex')]);
  t.same(await subscribe(ana, mine), { subscribed: true, buildingId: mine });
  t.same(await subscribe(ana, fence), { subscribed: true, buildingId: fence });
  t.same(await subscribe(ana, theirs), { subscribed: false, buildingId: theirs, reason: 'forbidden' });
  t.same(await readingsAfter(ana, [mine, theirs, uniqueName('b-unknown')], fence), [mine, fence]);
  t.equal(directory.calls.find((c) => c.buildingId === mine)?.claims, header, 'the claims header is forwarded verbatim');
  t.equal(await metric(relay.url, FORBIDDEN), 1);
  t.equal(await metric(relay.url, LOOKUP_FAILED), 0);
  t.same(directory.unexpected, []);
});

t.test('a building with no domains is forbidden, and that answer is cached for 60 s like any other', async (t) => {
  const { directory, relay, acme, ana } = await setup(t);
  const empty = uniqueName('b-empty');
  directory.set(empty, []);
  t.same(await subscribe(ana, empty), { subscribed: false, buildingId: empty, reason: 'forbidden' });
  t.equal(await metric(relay.url, FORBIDDEN), 1);
  directory.set(empty, [acme]);
  relay.advance(59_999);
  t.same(await subscribe(ana, empty), { subscribed: false, buildingId: empty, reason: 'forbidden' }, 'the empty answer still holds just before 60 s');
  t.equal(directory.callsFor(empty), 1);
  relay.advance(1);
  t.same(await subscribe(ana, empty), { subscribed: true, buildingId: empty }, 'after 60 s the new answer applies');
  t.equal(directory.callsFor(empty), 2);
  t.same(directory.unexpected, []);
});

t.test('a failing, unreachable or malformed directory answer is lookup_failed', async (t) => {
  const { directory, relay, ana } = await setup(t);
  const failing = uniqueName('b-500');
  const notFound = uniqueName('b-404');
  directory.set(failing, { status: 500 });
  directory.set(notFound, { status: 404 });
  t.same(await subscribe(ana, failing), { subscribed: false, buildingId: failing, reason: 'lookup_failed' });
  t.same(await subscribe(ana, notFound), { subscribed: false, buildingId: notFound, reason: 'lookup_failed' });
  t.equal(await metric(relay.url, LOOKUP_FAILED), 2);
  t.equal(await metric(relay.url, FORBIDDEN), 0);
  t.same(directory.unexpected, []);
});

t.test('a directory on a closed port is lookup_failed', async (t) => {
  // Port 9 (discard): nothing listens there, and no test binds it, unlike a port freed here for the purpose.
  const relay = await startRelay(t, { directory: { url: 'http://127.0.0.1:9' } });
  const ana = await connectClient(t, relay.url, claimsOf({ sub: 'ana', domains: ['acme'] }));
  t.same(await subscribe(ana, 'b1'), { subscribed: false, buildingId: 'b1', reason: 'lookup_failed' });
  t.equal(await metric(relay.url, LOOKUP_FAILED), 1);
});

t.test('a directory that never answers times out (2 s) as lookup_failed, and is not cached', async (t) => {
  const { directory, relay, acme, ana } = await setup(t);
  const slow = uniqueName('b-slow');
  directory.set(slow, 'hang');
  t.same(await subscribe(ana, slow), { subscribed: false, buildingId: slow, reason: 'lookup_failed' });
  t.equal(await metric(relay.url, LOOKUP_FAILED), 1);
  directory.set(slow, [acme]);
  t.same(await subscribe(ana, slow), { subscribed: true, buildingId: slow }, 'the next attempt asks again');
  t.equal(directory.callsFor(slow), 2);
});

t.test('calls still queued when their socket leaves never reach the directory', async (t) => {
  const directory = await startFakeDirectory(t);
  const { logger, lines } = capturedLogger('debug');
  // The first lookup must still be in flight when the relay sees the socket leave, however busy the
  // machine: with a short timeout it could end first, and the next queued call would ask the directory.
  const relay = await startRelay(t, { directory, logger, directoryTimeoutMs: 10_000 });
  const slow = uniqueName('b-slow');
  directory.set(slow, 'hang');
  const ana = await connectClient(t, relay.url, claimsOf({ sub: uniqueName('ana'), domains: [uniqueName('acme')] }));
  for (let i = 0; i < 3; i++) ana.socket.emit('subscribe_building', slow);
  await waitFor(() => directory.callsFor(slow) === 1, 'the first lookup');
  ana.socket.disconnect();
  // The queued calls get their turn once the first lookup times out.
  await waitFor(() => lines.filter((l) => l.msg === 'subscription dropped: the socket left before its turn').length === 2, 'both queued calls dropped', 30_000);
  t.equal(directory.callsFor(slow), 1, 'only the call in flight when the socket left asked the directory');
});

t.test('invalid building ids are refused without a lookup', async (t) => {
  const { directory, relay, ana } = await setup(t);
  const invalid: Array<[string, unknown, string]> = [
    ['a number', 17, ''],
    ['null', null, ''],
    ['an object', { id: 'b1' }, ''],
    ['an array', ['b1'], ''],
    ['empty', '', ''],
    ['blank', '   ', '   '],
    ['257 characters', 'b'.repeat(257), 'b'.repeat(256)],
    ['a newline', 'b1\nb2', 'b1\nb2'],
    ['a NUL', 'b1\u0000', 'b1\u0000'],
    ['a DEL', 'b1\u007f', 'b1\u007f'],
  ];
  for (const [label, value, echo] of invalid) {
    t.same(await subscribe(ana, value), { subscribed: false, buildingId: echo, reason: 'forbidden' }, label);
  }
  const noArgument = (await ana.socket.timeout(5000).emitWithAck('subscribe_building')) as unknown;
  t.same(noArgument, { subscribed: false, buildingId: '', reason: 'forbidden' }, 'no argument at all');
  t.equal(await metric(relay.url, FORBIDDEN), invalid.length + 1);
  t.same(directory.calls, [], 'the directory was never asked');
  t.same(directory.unexpected, []);
  const longest = 'b'.repeat(256);
  directory.set(longest, []);
  t.same(await subscribe(ana, longest), { subscribed: false, buildingId: longest, reason: 'forbidden' }, '256 characters, the longest telemetry accepts, is still a valid id');
  t.equal(directory.callsFor(longest), 1);
});

t.test('a caller that ignores the ack still joins', async (t) => {
  const { directory, relay, redis, acme, ana, readingsAfter } = await setup(t);
  const b = uniqueName('b');
  directory.set(b, [acme]);
  ana.socket.emit('subscribe_building', b);
  // No ack tells when the join happened: keep publishing until a reading arrives.
  await waitFor(async () => {
    await redis.publish(`${relay.channels.telemetryPrefix}${b}`, JSON.stringify({ building: b }));
    return ana.telemetry.length > 0;
  }, 'a reading of the building');
  t.same(ana.telemetry[0], { building: b }, 'readings arrive without an acknowledgement');
  t.equal(directory.callsFor(b), 1);
  t.same(await readingsAfter(ana, [], b).then((list) => list.at(-1)), b);
});

t.test('unsubscribe_building leaves the room, without an acknowledgement', async (t) => {
  const { directory, acme, ana, readingsAfter } = await setup(t);
  const b = uniqueName('b');
  const fence = uniqueName('b-fence');
  directory.set(b, [acme]);
  directory.set(fence, [acme]);
  await subscribe(ana, b);
  await subscribe(ana, fence);
  t.same(await readingsAfter(ana, [b], fence), [b, fence]);
  let acked = false;
  ana.socket.emit('unsubscribe_building', b, () => (acked = true));
  t.same(await readingsAfter(ana, [b], fence), [fence], 'no reading of the left building');
  t.equal(acked, false, 'no acknowledgement');
  t.ok(ana.socket.connected, 'unsubscribing never drops the socket');
  ana.socket.emit('unsubscribe_building', 42);
  ana.socket.emit('unsubscribe_building', uniqueName('never-joined'));
  t.same(await readingsAfter(ana, [], fence), [fence], 'bad unsubscribe arguments are ignored');
});

t.test('an unsubscribe sent while the lookup is pending wins', async (t) => {
  const { directory, acme, ana, readingsAfter } = await setup(t);
  const b = uniqueName('b');
  const fence = uniqueName('b-fence');
  directory.set(fence, [acme]);
  await subscribe(ana, fence);
  directory.set(b, 'hang');
  const pending = subscribe(ana, b);
  await waitFor(() => directory.callsFor(b) === 1, 'the pending lookup');
  ana.socket.emit('unsubscribe_building', b);
  t.same(await pending, { subscribed: false, buildingId: b, reason: 'lookup_failed' });
  // Now the answer is positive, but the later unsubscribe must still be honoured after a join.
  directory.set(b, [acme]);
  const second = subscribe(ana, b);
  ana.socket.emit('unsubscribe_building', b);
  t.same(await second, { subscribed: true, buildingId: b });
  t.same(await readingsAfter(ana, [b], fence), [fence], 'the unsubscribe that followed the subscribe applies');
});

t.test('the building domains are cached for 60 s per building (injectable clock)', async (t) => {
  const { directory, relay, acme, header, ana } = await setup(t);
  const b = uniqueName('b');
  const other = uniqueName('b-other');
  directory.set(b, [acme]);
  directory.set(other, [acme]);
  const bob = await connectClient(t, relay.url, claimsOf({ sub: 'bob', domains: [uniqueName('globex')] }));
  t.same(await subscribe(ana, b), { subscribed: true, buildingId: b });
  t.same(await subscribe(bob, b), { subscribed: false, buildingId: b, reason: 'forbidden' }, 'the cached answer is filtered per account');
  t.same(await subscribe(ana, other), { subscribed: true, buildingId: other });
  t.equal(directory.callsFor(b), 1, 'one lookup for two sockets');
  relay.advance(59_999);
  await subscribe(ana, b);
  t.equal(directory.callsFor(b), 1, 'still cached just before 60 s');
  relay.advance(1);
  directory.set(b, [uniqueName('moved')]);
  t.same(await subscribe(ana, b), { subscribed: false, buildingId: b, reason: 'forbidden' }, 'after 60 s the new answer applies');
  t.equal(directory.callsFor(b), 2);
  t.equal(directory.calls.filter((c) => c.buildingId === b)[1]?.claims, header);
});

t.test('a refused subscribe_building leaves the building room: the ack says "not in the room" and no reading follows', async (t) => {
  const { directory, relay, acme, ana, readingsAfter } = await setup(t);
  const moved = uniqueName('b-moved');
  const flaky = uniqueName('b-flaky');
  const fence = uniqueName('b-fence');
  directory.set(moved, [acme]);
  directory.set(flaky, [acme]);
  directory.set(fence, [acme]);
  t.same(await subscribe(ana, moved), { subscribed: true, buildingId: moved });
  t.same(await subscribe(ana, flaky), { subscribed: true, buildingId: flaky });
  t.same(await subscribe(ana, fence), { subscribed: true, buildingId: fence });
  t.same(await readingsAfter(ana, [moved, flaky], fence), [moved, flaky, fence]);

  // The building changed tenant; once the cached answer expires, asking again must not keep the old room.
  relay.advance(60_000);
  directory.set(moved, [uniqueName('new-owner')]);
  directory.set(flaky, { status: 500 });
  t.same(await subscribe(ana, moved), { subscribed: false, buildingId: moved, reason: 'forbidden' });
  t.same(await subscribe(ana, flaky), { subscribed: false, buildingId: flaky, reason: 'lookup_failed' });
  t.same(await readingsAfter(ana, [moved, flaky], fence), [fence], 'no reading of a building whose subscription was refused');
  t.equal((await relay.relay.io.in(`building:${moved}`).fetchSockets()).length, 0);
  t.equal(await metric(relay.url, FORBIDDEN), 1);
  t.equal(await metric(relay.url, LOOKUP_FAILED), 1);
  t.ok(ana.socket.connected, 'a refusal never drops the socket');
});

t.test(`a call past the ${MAX_LOOKUPS_IN_FLIGHT} lookups in flight waits its turn instead of being refused`, async (t) => {
  const { directory, acme, ana, relay } = await setup(t);
  const hanging = Array.from({ length: MAX_LOOKUPS_IN_FLIGHT }, () => uniqueName('b-hang'));
  for (const b of hanging) directory.set(b, 'hang');
  const pending = hanging.map((b) => subscribe(ana, b));
  await waitFor(() => hanging.every((b) => directory.callsFor(b) === 1), 'every lookup in flight');
  const extra = uniqueName('b-extra');
  directory.set(extra, [acme]);
  const extraAck = subscribe(ana, extra);
  for (const answer of await Promise.all(pending)) t.equal(answer.reason, 'lookup_failed', `${answer.buildingId} timed out`);
  t.same(await extraAck, { subscribed: true, buildingId: extra }, 'the waiting call is looked up once a slot frees');
  t.equal(directory.callsFor(extra), 1);
  t.equal(await metric(relay.url, LOOKUP_FAILED), MAX_LOOKUPS_IN_FLIGHT, 'only the timed-out lookups count as failures');
});

t.test(`a subscribe_building refused past ${MAX_PENDING_SUBSCRIPTIONS} waiting calls also leaves the building room`, async (t) => {
  // Long enough that the hanging lookups hold their slots for the whole test, however busy the machine.
  const { directory, acme, ana, readingsAfter } = await setup(t, { directoryTimeoutMs: 30_000 });
  const joined = uniqueName('b-joined');
  const fence = uniqueName('b-fence');
  const filler = uniqueName('b-filler');
  directory.set(joined, [acme]);
  directory.set(fence, [acme]);
  directory.set(filler, [acme]);
  t.same(await subscribe(ana, joined), { subscribed: true, buildingId: joined });
  t.same(await subscribe(ana, fence), { subscribed: true, buildingId: fence });
  const hanging = Array.from({ length: MAX_LOOKUPS_IN_FLIGHT }, () => uniqueName('b-hang'));
  for (const b of hanging) directory.set(b, 'hang');
  // No acks: these calls are still waiting when the socket closes at teardown, which drops them.
  for (const b of hanging) ana.socket.emit('subscribe_building', b);
  for (let i = MAX_LOOKUPS_IN_FLIGHT; i < MAX_PENDING_SUBSCRIPTIONS; i++) ana.socket.emit('subscribe_building', filler);
  t.same(await subscribe(ana, joined), { subscribed: false, buildingId: joined, reason: 'lookup_failed' }, 'refused past the bound');
  t.same(await readingsAfter(ana, [joined], fence), [fence], 'the ack said "not subscribed", so no reading of that building follows');
  t.equal(directory.callsFor(filler), 0, 'the queued calls still wait behind the hanging lookups');
});

t.test(`repeated subscribe_building calls for one building count against the cap of ${MAX_PENDING_SUBSCRIPTIONS} waiting lookups`, async (t) => {
  const { directory, relay, ana } = await setup(t);
  const slow = uniqueName('b-slow');
  directory.set(slow, 'hang');
  const calls = Array.from({ length: MAX_PENDING_SUBSCRIPTIONS + 1 }, () => ana.socket.emitWithAck('subscribe_building', slow) as Promise<{ reason?: string }>);
  // The first lookup hangs until its 2 s timeout; every later call for the building waits behind it.
  await waitFor(() => directory.callsFor(slow) === 1, 'the first lookup in flight');
  // A failing answer is never cached, so each call within the cap asks the directory in its turn.
  directory.set(slow, { status: 500 });
  const acks = await Promise.all(calls);
  t.equal(acks[0]?.reason, 'lookup_failed', 'the first lookup timed out');
  t.same(acks.slice(1, -1).map((a) => a.reason), Array(MAX_PENDING_SUBSCRIPTIONS - 1).fill('lookup_failed'), 'the calls within the cap were looked up, in order');
  t.same(acks.at(-1), { subscribed: false, buildingId: slow, reason: 'lookup_failed' }, 'the call past the cap is refused');
  t.equal(directory.callsFor(slow), MAX_PENDING_SUBSCRIPTIONS, 'without a directory call of its own');
  t.equal(await metric(relay.url, LOOKUP_FAILED), MAX_PENDING_SUBSCRIPTIONS + 1);
});

t.test('a building id with a lone surrogate is refused as forbidden without a lookup, not counted as a directory failure', async (t) => {
  const { directory, relay, acme, ana } = await setup(t);
  // Not encodable in a directory URL nor in a UTF-8 channel name: no building's readings can carry it.
  for (const id of ['b\uD800', '\uDE00b', `${uniqueName('b')}\uDBFF`]) {
    t.same(await subscribe(ana, id), { subscribed: false, buildingId: id, reason: 'forbidden' }, JSON.stringify(id));
  }
  t.equal(await metric(relay.url, FORBIDDEN), 3);
  t.equal(await metric(relay.url, LOOKUP_FAILED), 0, 'the directory did not fail: it was never asked');
  const emoji = `${uniqueName('b')}-\uD83C\uDFE2`;
  directory.set(emoji, [acme]);
  t.same(await subscribe(ana, emoji), { subscribed: true, buildingId: emoji }, 'a well-formed pair is an ordinary character');
  t.same(directory.calls.map((c) => c.buildingId), [emoji]);
});
