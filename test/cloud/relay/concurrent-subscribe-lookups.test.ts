/**
 * A reconnect storm: after a failover, many sockets land on one replica at once and each subscribes to
 * the same building. They must share one directory lookup, not send one each and time out together.
 */
import t from 'tap';
import { createServer, type ServerResponse } from 'node:http';
import { closeServer, listen } from '../../../shared/lifecycle.js';
import { claimsOf, connectClient, startRelay, subscribe, uniqueName, type Teardown } from './support/relay-harness.js';

/**
 * A building directory that holds its one answer for `held` until `release`, answers `fence` at once as
 * often as asked, and refuses anything else (a second call for `held` included), failing the test.
 */
async function holdingDirectory(t: Teardown, buildings: { held: string; fence: string; domains: string[] }) {
  const heldCalls: string[] = [];
  const unexpected: string[] = [];
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const answer = (res: ServerResponse) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(buildings.domains));
  t.teardown(() => {
    if (unexpected.length > 0) throw new Error(`the directory got calls it was not set up for: ${unexpected.join(' | ')}`);
  });
  const server = createServer((req, res) => {
    const url = req.url ?? '';
    if (req.method === 'GET' && url === `/domain/${buildings.fence}`) return void answer(res);
    if (req.method === 'GET' && url === `/domain/${buildings.held}`) {
      heldCalls.push(url);
      if (heldCalls.length === 1) return void released.then(() => answer(res));
    }
    unexpected.push(`${req.method} ${url}`);
    res.writeHead(500).end('unexpected call');
  });
  const port = await listen(server, 0, '127.0.0.1');
  t.teardown(async () => {
    const closing = closeServer(server);
    server.closeAllConnections();
    await closing;
  });
  return { url: `http://127.0.0.1:${port}`, heldCalls, unexpected, release };
}

t.test('sockets subscribing to one building at once share one directory lookup', async (t) => {
  const acme = uniqueName('acme');
  const building = uniqueName('b');
  const fence = uniqueName('b-fence');
  const directory = await holdingDirectory(t, { held: building, fence, domains: [acme] });
  // Long enough that the held lookup cannot time out while the sockets line up, however busy the machine.
  const relay = await startRelay(t, { directory, directoryTimeoutMs: 10_000 });
  const clients = await Promise.all(Array.from({ length: 8 }, () => connectClient(t, relay.url, claimsOf({ sub: uniqueName('user'), domains: [acme] }))));
  const acks = clients.map((client) => subscribe(client, building));
  // A socket's events are handled in order, so once its fence is acknowledged its lookup of the
  // building has been asked for: every socket is now waiting on the directory.
  await Promise.all(clients.map((client) => subscribe(client, fence)));
  directory.release();
  t.same(await Promise.all(acks), Array(clients.length).fill({ subscribed: true, buildingId: building }), 'every socket joined');
  t.same(directory.heldCalls, [`/domain/${building}`], `one directory call for ${clients.length} sockets`);
  t.same(directory.unexpected, []);
});
