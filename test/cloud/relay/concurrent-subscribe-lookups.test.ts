/**
 * A reconnect storm: after a failover, many sockets land on one replica at once and each subscribes to
 * the same building. They must share one directory lookup, not send one each and time out together.
 */
import t from 'tap';
import { holdingDirectory } from './support/holding-directory.js';
import { claimsOf, connectClient, startRelay, subscribe, uniqueName } from './support/relay-harness.js';

t.test('sockets subscribing to one building at once share one directory lookup', async (t) => {
  const acme = uniqueName('acme');
  const building = uniqueName('b');
  const fence = uniqueName('b-fence');
  const directory = await holdingDirectory(t, { held: [building], answered: [fence], domains: [acme] });
  // Long enough that the held lookup cannot time out while the sockets line up, however busy the machine.
  const relay = await startRelay(t, { directory, directoryTimeoutMs: 10_000 });
  const clients = await Promise.all(Array.from({ length: 8 }, () => connectClient(t, relay.url, claimsOf({ sub: uniqueName('user'), domains: [acme] }))));
  const acks = clients.map((client) => subscribe(client, building));
  // A socket's events are handled in order, so once its fence is acknowledged its lookup of the
  // building has been asked for: every socket is now waiting on the directory.
  await Promise.all(clients.map((client) => subscribe(client, fence)));
  directory.release();
  t.same(await Promise.all(acks), Array(clients.length).fill({ subscribed: true, buildingId: building }), 'every socket joined');
  t.same(directory.calls.filter((b) => b === building), [building], `one directory call for ${clients.length} sockets`);
  t.same(directory.unexpected, []);
});
