/**
 * A dashboard re-subscribing every building it shows on connect: one emit loop, whose frames the relay
 * handles before any lookup settles. Calls past the lookups in flight wait their turn; only calls past the
 * bounded queue are refused.
 */
import t from 'tap';
import { startFakeDirectory } from '../../support/fake-directory.js';
import { MAX_LOOKUPS_IN_FLIGHT, MAX_PENDING_SUBSCRIPTIONS } from '../../../cloud/relay/subscriptions.js';
import { holdingDirectory } from './support/holding-directory.js';
import { capturedLogger, claimsOf, connectClient, startRelay, uniqueName, waitFor, type Ack, type Client } from './support/relay-harness.js';

/** Emits subscribe_building for every building in one synchronous loop, as a reconnecting client does. */
function subscribeAll(client: Client, buildings: string[]): Array<Promise<Ack>> {
  return buildings.map((b) => client.socket.timeout(30_000).emitWithAck('subscribe_building', b) as Promise<Ack>);
}

t.test('a client re-subscribing 40 buildings in one emit loop gets every one', async (t) => {
  const directory = await startFakeDirectory(t);
  const relay = await startRelay(t, { directory });
  const acme = uniqueName('acme');
  const header = claimsOf({ sub: uniqueName('ana'), domains: [acme] });
  const buildings = Array.from({ length: 40 }, () => uniqueName('b'));
  for (const b of buildings) directory.set(b, [acme]);
  const expected = buildings.map((buildingId) => ({ subscribed: true, buildingId }));

  const first = await connectClient(t, relay.url, header);
  t.same(await Promise.all(subscribeAll(first, buildings)), expected, 'the first connect, each building looked up');
  first.socket.disconnect();
  // The reconnect after a lifetime expiry: every answer is cached now.
  const again = await connectClient(t, relay.url, header);
  t.same(await Promise.all(subscribeAll(again, buildings)), expected, 'the reconnect, every answer cached');
  t.equal((await relay.relay.io.in(`building:${buildings.at(-1)}`).fetchSockets()).length, 1, 'the reconnected socket is in the last room');
  t.ok(buildings.every((b) => directory.callsFor(b) === 1), 'one directory call per building');
});

t.test(`calls past the ${MAX_PENDING_SUBSCRIPTIONS} a socket may have waiting are refused at once; the others wait their turn`, async (t) => {
  const acme = uniqueName('acme');
  const held = Array.from({ length: MAX_LOOKUPS_IN_FLIGHT }, () => uniqueName('b-held'));
  const queued = Array.from({ length: MAX_PENDING_SUBSCRIPTIONS - MAX_LOOKUPS_IN_FLIGHT }, () => uniqueName('b-queued'));
  const excess = Array.from({ length: 3 }, () => uniqueName('b-excess'));
  const directory = await holdingDirectory(t, { held, answered: queued, domains: [acme] });
  // The held lookups must not time out while the test waits on the excess acks, however busy the machine.
  const relay = await startRelay(t, { directory, directoryTimeoutMs: 30_000 });
  const ana = await connectClient(t, relay.url, claimsOf({ sub: uniqueName('ana'), domains: [acme] }));

  const acks = subscribeAll(ana, [...held, ...queued, ...excess]);
  // Nothing settles while the first lookups are held, so the count does not depend on how the frames
  // were split into reads.
  const excessAcks = await Promise.all(acks.slice(-excess.length));
  t.same(excessAcks, excess.map((buildingId) => ({ subscribed: false, buildingId, reason: 'lookup_failed' })), 'only the calls past the bound are refused');
  await waitFor(() => directory.calls.length === held.length, 'the held lookups in flight');
  t.same([...directory.calls].sort(), [...held].sort(), `${MAX_LOOKUPS_IN_FLIGHT} lookups in flight, the rest waiting`);

  directory.release();
  const settled = await Promise.all(acks.slice(0, -excess.length));
  t.same(settled, [...held, ...queued].map((buildingId) => ({ subscribed: true, buildingId })), 'every call within the bound subscribed');
  t.same(directory.unexpected, [], 'the excess never reached the directory');
});

t.test('calls waiting for a lookup slot when their socket leaves are dropped without reaching the directory', async (t) => {
  const directory = await startFakeDirectory(t);
  const { logger, lines } = capturedLogger('debug');
  // The held lookups must still be in flight when the relay sees the socket leave, however busy the machine.
  const relay = await startRelay(t, { directory, logger, directoryTimeoutMs: 30_000 });
  const acme = uniqueName('acme');
  const hanging = Array.from({ length: MAX_LOOKUPS_IN_FLIGHT }, () => uniqueName('b-hang'));
  const waiting = Array.from({ length: 3 }, () => uniqueName('b-waiting'));
  for (const b of hanging) directory.set(b, 'hang');
  for (const b of waiting) directory.set(b, [acme]);
  const ana = await connectClient(t, relay.url, claimsOf({ sub: uniqueName('ana'), domains: [acme] }));
  for (const b of [...hanging, ...waiting]) ana.socket.emit('subscribe_building', b);
  await waitFor(() => hanging.every((b) => directory.callsFor(b) === 1), 'every slot taken');
  ana.socket.disconnect();
  await waitFor(() => lines.filter((l) => l.msg === 'subscription dropped: the socket left before its turn').length === waiting.length, 'the waiting calls dropped');
  t.same(waiting.map((b) => directory.callsFor(b)), [0, 0, 0], 'none of them asked the directory');
});
