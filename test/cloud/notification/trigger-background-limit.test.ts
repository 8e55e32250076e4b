/**
 * A /trigger's push fan-out counts against the delivery's background bound, like a breach event: a
 * breach slice waits for room behind it, and a second /trigger waits for room before its pushes start,
 * so concurrent /trigger calls cannot queue pushes without bound. /trigger still answers once its
 * pushes are done, with their count. Real Redis, FerretDB and pushes to a fake push host whose answer
 * the test holds; the bound is 1 event, so one held fan-out fills it.
 */
import t from 'tap';
import type { Notification } from '../../../shared/notification.js';
import { startFakeDirectory } from './support/fake-directory.js';
import { startFakePushHost } from './support/fake-push-host.js';
import { browserKeys, call, claims, member, newVapid, startHarness } from './support/harness.js';
import { uniqueName, waitFor, type Teardown } from './support/stack.js';

const directory = await startFakeDirectory(t);
const twin = claims('system:digital-twin', 'digital-twin');
const keys = browserKeys();

/** A push host, a service whose background holds one event, and a release for the held push's answer. */
async function setUp(t: Teardown) {
  const vapid = newVapid();
  // Started before the harness, so its check of unexpected requests runs after the harness drained.
  const host = await startFakePushHost(t, { vapidPublicKey: vapid.publicKey });
  const h = await startHarness(t, { directory, vapid, maxBackground: 1 });
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  /** A building of its own domain, with one member's device at `path` on the push host. */
  async function buildingWithDevice(path: string, answer: { answerWhen?: Promise<unknown> } = {}) {
    const domainName = uniqueName('acme');
    const buildingId = uniqueName('b');
    directory.set(buildingId, [domainName]);
    const endpoint = host.subscribe(path, 201, answer);
    const res = await call(h.url, 'POST', '/subscribe', { claims: member(domainName).header, body: { subscription: { endpoint, keys }, domainName } });
    if (res.status !== 201) throw new Error(`subscribe failed: ${JSON.stringify(res.body)}`);
    return { domainName, buildingId };
  }
  return { host, h, held, release, buildingWithDevice };
}

t.test('a breach slice waits for room behind a /trigger fan-out', async (t) => {
  const { host, h, held, release, buildingWithDevice } = await setUp(t);
  const triggered = await buildingWithDevice('/push/trigger', { answerWhen: held });
  // Held too: the slice's own fan-out, once done, would free the room it waits for.
  const breached = await buildingWithDevice('/push/breach', { answerWhen: held });

  const trigger = call(h.url, 'POST', '/trigger', { claims: twin, body: { buildingId: triggered.buildingId } });
  await waitFor('the /trigger push at the push host', () => host.calls.includes('/push/trigger'));

  const alert: Notification = {
    id: uniqueName('n'),
    kind: 'alert',
    severity: 'danger',
    title: 'Temperature high',
    message: 'Room r1 is at 31',
    buildingId: breached.buildingId,
    roomId: 'r1',
    metric: 'temperature',
    field: 'temperature',
    domainName: breached.domainName,
    createdAt: new Date().toISOString(),
  };
  let roomGiven = false;
  const slice = h.delivery.pushInBackground([{ byDomain: new Map([[breached.domainName, alert]]), metric: 'temperature' }], () => 'topic').then(() => {
    roomGiven = true;
  });
  await waitFor('the breach push at the push host', () => host.calls.includes('/push/breach'));
  t.notOk(roomGiven, 'the breach slice still waits for room: the /trigger fan-out holds it');

  release();
  t.same(await trigger, { status: 200, body: { domains: [triggered.domainName], inApp: 1, push: 1 } });
  await slice;
  t.ok(roomGiven, 'the breach slice gets room once the /trigger fan-out is done');
});

t.test('a second /trigger waits for room before its pushes start, then answers with its push count', async (t) => {
  const { host, h, held, release, buildingWithDevice } = await setUp(t);
  const first = await buildingWithDevice('/push/first', { answerWhen: held });
  const second = await buildingWithDevice('/push/second');

  const firstCall = call(h.url, 'POST', '/trigger', { claims: twin, body: { buildingId: first.buildingId } });
  await waitFor('the first /trigger push at the push host', () => host.calls.includes('/push/first'));
  const secondCall = call(h.url, 'POST', '/trigger', { claims: twin, body: { buildingId: second.buildingId } });
  await waitFor('the second /trigger waiting for room, or its push', () => h.delivery.waitingForRoom === 1 || host.calls.includes('/push/second'));
  t.notOk(host.calls.includes('/push/second'), 'the second /trigger’s push has not started while the first holds the room');
  t.equal(h.delivery.waitingForRoom, 1, 'the second /trigger waits for room');

  release();
  t.same(await firstCall, { status: 200, body: { domains: [first.domainName], inApp: 1, push: 1 } });
  t.same(await secondCall, { status: 200, body: { domains: [second.domainName], inApp: 1, push: 1 } }, 'it still answers once its pushes are done, with their count');
  t.same(host.calls, ['/push/first', '/push/second']);
  t.equal(h.delivery.waitingForRoom, 0);
});

t.test('the directory got no call it was not set up for', async (t) => {
  t.same(directory.unexpected, []);
});
