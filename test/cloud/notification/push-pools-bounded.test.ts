/**
 * Connection pools per push service are bounded. /subscribe takes any public https origin, and an
 * account can rotate through new ones; undici's Agent would keep a pool for every origin it ever pushed
 * to. The sender keeps the pools of its most recently used origins only, closing the others, and still
 * refuses private destinations in every pool it makes.
 *
 * The push service is web-push-testing (support/push-service.ts), reached through plain TCP forwarders
 * on loopback ports of their own: one distinct origin each, the same real push service behind all.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import t from 'tap';
import { listen } from '../../../shared/lifecycle.js';
import { WebPushSender } from '../../../cloud/notification/push.js';
import { newVapid } from './support/harness.js';
import { startPushService, type BrowserSubscription } from './support/push-service.js';
import { waitFor, type Teardown } from './support/stack.js';

interface Forwarder {
  port: number;
  /** Connections accepted so far. */
  accepted: number;
  /** Connections still open. */
  open: number;
}

/** A loopback port that forwards every connection to `targetPort`: one more origin for the same server. */
async function startForwarder(t: Teardown, targetPort: number): Promise<Forwarder> {
  const sockets = new Set<Socket>();
  const forwarder: Forwarder = { port: 0, accepted: 0, open: 0 };
  const server: Server = createServer((socket) => {
    forwarder.accepted++;
    forwarder.open++;
    const upstream = connect(targetPort, '127.0.0.1');
    sockets.add(socket).add(upstream);
    socket.pipe(upstream).pipe(socket);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
    socket.on('close', () => {
      forwarder.open--;
      sockets.delete(socket);
      upstream.destroy();
    });
    upstream.on('close', () => {
      sockets.delete(upstream);
      socket.destroy();
    });
  });
  forwarder.port = await listen(server, 0, '127.0.0.1');
  t.teardown(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return forwarder;
}

/** The subscription's endpoint moved to another host and port: the same push service, another origin. */
function via(subscription: BrowserSubscription, host: string, port: number) {
  const endpoint = new URL(subscription.endpoint);
  endpoint.hostname = host;
  endpoint.port = String(port);
  return { endpoint: endpoint.href, keys: subscription.keys };
}

function servicePort(url: string): number {
  return Number(new URL(url).port);
}

t.test('pushes to more origins than the cap all arrive, and the pools kept stay at the cap', async (t) => {
  const vapid = newVapid();
  const service = await startPushService(t);
  const forwarders: Forwarder[] = [];
  for (let i = 0; i < 6; i++) forwarders.push(await startForwarder(t, servicePort(service.url)));
  const sender = new WebPushSender({ vapid, timeoutMs: 5000, allowHttp: true, allowPrivateDestinations: true, maxPushServices: 3 });
  t.teardown(() => sender.close());

  const kept: number[] = [];
  for (const round of [1, 2]) {
    for (const [i, forwarder] of forwarders.entries()) {
      const browser = await service.subscribe(vapid.publicKey);
      const payload = JSON.stringify({ title: `round ${round}, origin ${i}` });
      const result = await sender.send(via(browser, '127.0.0.1', forwarder.port), { payload });
      t.match(result, { kind: 'sent' }, `round ${round}, origin ${i}: sent`);
      t.same(await service.messages(browser.clientHash), [payload], `round ${round}, origin ${i}: the push service decrypted it`);
      kept.push(sender.pushServicesKept);
    }
  }
  t.same(kept, [1, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3], 'never more pools than the cap, whatever the number of origins');
  t.same(forwarders.map((f) => f.accepted), [2, 2, 2, 2, 2, 2], 'each origin was connected to again after its pool was closed');
  // The last round evicted the first three origins: their pools are closed, and so their connections.
  await waitFor('the evicted pools to close their connections', () => forwarders.slice(0, 3).every((f) => f.open === 0));
  t.pass('the connections of the evicted pools are closed');
});

t.test('allowance off: every pool refuses private destinations, by name and by literal, and nothing is connected', async (t) => {
  const vapid = newVapid();
  const service = await startPushService(t);
  const forwarders: Forwarder[] = [];
  for (let i = 0; i < 4; i++) forwarders.push(await startForwarder(t, servicePort(service.url)));
  const sender = new WebPushSender({ vapid, timeoutMs: 5000, allowHttp: true, allowPrivateDestinations: false, maxPushServices: 2 });
  t.teardown(() => sender.close());

  for (const host of ['localhost', '127.0.0.1']) {
    for (const [i, forwarder] of forwarders.entries()) {
      const browser = await service.subscribe(vapid.publicKey);
      const result = await sender.send(via(browser, host, forwarder.port), { payload: '{}' });
      t.match(result, { kind: 'failed', reason: 'forbidden_destination' }, `${host}, origin ${i}: refused`);
      t.ok(sender.pushServicesKept <= 2, `${host}, origin ${i}: pools within the cap`);
    }
  }
  t.same(forwarders.map((f) => f.accepted), [0, 0, 0, 0], 'no connection reached any of them');
});
