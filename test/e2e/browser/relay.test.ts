/**
 * The socket relay seen from a real browser (headless Chromium): a page on the FRONTEND_URL origin
 * loads the socket.io browser bundle and opens a websocket to the relay through a loopback stand-in for
 * the mesh, which turns the HttpOnly `authentication_token` cookie into `x-gateway-claims`. Telemetry
 * and notifications are published on the stack's Redis and read back from the page.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import t from 'tap';
import { request } from 'undici';
import { encodeClaims } from '../../../shared/claims.js';
import { createBuildingDirectory } from '../../../shared/directory.js';
import { silentLogger } from '../../../shared/logger.js';
import { createRegistry } from '../../../shared/prom.js';
import { metricOf } from '../../../shared/catalog/metrics.js';
import { declaredView } from '../../../shared/catalog/validate.js';
import { createRelay } from '../../../cloud/relay/app.js';
import { RedisSubscriber } from '../../../cloud/relay/redis-subscriber.js';
import { telemetryPattern, type BrokerChannels } from '../../../cloud/relay/routing.js';
import { serve } from '../../support/http.js';
import { stackEnv, uniqueName } from '../../support/stack.js';
import { launchBrowser, openPage, profile, screenshotPath, waitFor } from './support/browser.js';
import { startFakeDirectory } from '../../support/fake-directory.js';
import { frontend } from './support/frontend.js';
import { startMesh } from './support/mesh.js';

/** What the page keeps on `window.relay` (see the script in pages/relay.html). */
interface RelayPage {
  status: 'connecting' | 'connected' | 'rejected' | 'disconnected';
  connectError: string | null;
  acks: Array<{ subscribed: boolean; buildingId: string; reason?: string }>;
  telemetry: Array<Record<string, unknown>>;
  notifications: Array<Record<string, unknown>>;
  disconnects: string[];
  subscribe(buildingId: string): Promise<{ subscribed: boolean; buildingId: string; reason?: string }>;
  unsubscribe(buildingId: string): void;
  probeCors(): Promise<{ ok: boolean; status?: number; body?: string; error?: string }>;
}
type PageGlobals = { relay: RelayPage; document: { cookie: string } };

// --- One relay, mesh, frontend and browser for the file -------------------------------------------

const domainA = uniqueName('acme');
const domainB = uniqueName('globex');
const allowedBuilding = uniqueName('tower');
const forbiddenBuilding = uniqueName('depot');
const anaToken = randomBytes(18).toString('base64url');
const ana = encodeClaims({ sub: uniqueName('ana'), accountName: 'ana@acme.test', memberships: [{ domainName: domainA, role: 'viewer' }] });

const directory = await startFakeDirectory(t);
directory.set(allowedBuilding, [domainA]);
directory.set(forbiddenBuilding, [domainB]);

const site = frontend(['relay.html']);
const frontendServer = await serve(t, site.handler);
const foreignServer = await serve(t, frontend(['relay.html']).handler);

const channels: BrokerChannels = { notifications: uniqueName('notifications'), telemetryPrefix: `${uniqueName('telemetry:filtered')}:` };
const broker = new RedisSubscriber({ url: stackEnv().REDIS_URL, channels: [channels.notifications], patterns: [telemetryPattern(channels)], logger: silentLogger() });
const relay = createRelay(
  {
    directory: createBuildingDirectory({ baseUrl: directory.url, timeoutMs: 2000, cacheTtlMs: 60_000 }),
    broker,
    registry: createRegistry('relay', { defaults: false }),
    logger: silentLogger(),
  },
  // FRONTEND_URL is the page's origin: a different port from the relay's, so the browser treats the
  // socket as cross-origin and sends Origin; cookies ignore ports, so it still sends the cookie.
  { frontendOrigin: frontendServer.url, maxLifetimeMs: 900_000, channels },
);
const relayPort = await relay.start(0, '127.0.0.1');
t.teardown(() => relay.stop());
await broker.subscribed();
const relayUrl = `http://127.0.0.1:${relayPort}`;

const mesh = await startMesh(t, { tokens: new Map([[anaToken, ana]]), routes: [{ prefix: '/', upstream: relayUrl }] });

const redis = new Redis(stackEnv().REDIS_URL, { maxRetriesPerRequest: 1 });
t.teardown(() => redis.quit().catch(() => redis.disconnect()));

const browser = await launchBrowser(t);

const pageUrl = (origin: string) => `${origin}/relay.html?relay=${encodeURIComponent(mesh.url)}`;

const temperature = metricOf('temperature');
if (!temperature) throw new Error('the catalog has no temperature metric');

/** A reading as the telemetry service publishes it for browsers: the declared fields only. */
function reading(buildingId: string, value: number): Record<string, unknown> {
  return declaredView(temperature as NonNullable<typeof temperature>, { type: 'temperature', buildingId, roomId: 'room-101', timestamp: Date.now(), temperature: value, internalNote: 'never shown' });
}

function notification(overrides: Record<string, unknown>): Record<string, unknown> {
  return { id: randomUUID(), kind: 'alert', severity: 'warning', title: 'Temperature high', message: 'Room 101 is above 26 °C', buildingId: allowedBuilding, roomId: 'room-101', createdAt: new Date().toISOString(), ...overrides };
}

/** One series of the relay's GET /metrics: the line of `name` carrying every label given. */
async function scrape(name: string, labels: Record<string, string> = {}): Promise<number> {
  const response = await request(`${relayUrl}/metrics`);
  const text = await response.body.text();
  const line = text.split('\n').find((l) => {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? \S+$/.exec(l);
    return m?.[1] === name && Object.entries(labels).every(([k, v]) => (m[2] ?? '').split(',').includes(`${k}="${v}"`));
  });
  if (line === undefined) throw new Error(`no series ${name} ${JSON.stringify(labels)} in /metrics`);
  return Number(line.slice(line.lastIndexOf(' ') + 1));
}

const buildingRoomSize = (buildingId: string) => relay.io.of('/').adapter.rooms.get(`building:${buildingId}`)?.size ?? 0;

t.teardown(() => {
  // Fakes fail loudly: a page asking for a file that is not there (the directory checks its own calls).
  if (site.misses.length > 0) throw new Error(`the frontend got requests it does not serve: ${site.misses.join(' | ')}`);
});

// --- Tests ----------------------------------------------------------------------------------------

t.test('a signed-in page receives its building telemetry and its domain notifications, nothing else', async (t) => {
  const context = await profile(browser, anaToken);
  t.teardown(() => context.close());
  const { page, errors } = await openPage(context, pageUrl(frontendServer.url));

  await page.waitForFunction(() => (globalThis as unknown as PageGlobals).relay.status !== 'connecting', undefined, { timeout: 10_000 });
  t.equal(await page.evaluate(() => (globalThis as unknown as PageGlobals).relay.status), 'connected', 'the handshake was accepted');
  t.notMatch(await page.evaluate(() => (globalThis as unknown as PageGlobals).document.cookie), anaToken, 'the token cookie is HttpOnly: page scripts cannot read it');

  const handshake = mesh.records.find((r) => r.kind === 'upgrade' && r.token === anaToken);
  t.ok(handshake, 'the browser sent the cookie on the websocket handshake, across ports');
  t.equal(handshake?.injected, ana, 'the mesh injected the claims of the cookie');

  const allowedAck = await page.evaluate((id) => (globalThis as unknown as PageGlobals).relay.subscribe(id), allowedBuilding);
  const forbiddenAck = await page.evaluate((id) => (globalThis as unknown as PageGlobals).relay.subscribe(id), forbiddenBuilding);
  t.same(allowedAck, { subscribed: true, buildingId: allowedBuilding }, 'a building of one of the account’s domains is joined');
  t.same(forbiddenAck, { subscribed: false, buildingId: forbiddenBuilding, reason: 'forbidden' }, 'a building of another domain is refused');
  t.same(
    directory.calls.map((c) => [c.buildingId, c.claims]),
    [[allowedBuilding, ana], [forbiddenBuilding, ana]],
    'each lookup carried the claims the mesh injected, verbatim',
  );
  t.equal(buildingRoomSize(allowedBuilding), 1);
  t.equal(buildingRoomSize(forbiddenBuilding), 0);

  // Redis delivers one subscriber's messages in publish order and the relay emits them in that order
  // on one websocket, so once the last (a broadcast) has arrived, everything before it has too.
  const forbiddenReading = reading(forbiddenBuilding, 31);
  const allowedReading = reading(allowedBuilding, 27.5);
  const otherTenant = notification({ domainName: domainB, buildingId: forbiddenBuilding, title: 'Depot too warm' });
  const ours = notification({ domainName: domainA });
  const broadcast = notification({ kind: 'manual', severity: 'info', title: 'Maintenance', message: 'Platform maintenance at 22:00', buildingId: allowedBuilding });
  await redis.publish(`${channels.telemetryPrefix}${forbiddenBuilding}`, JSON.stringify(forbiddenReading));
  await redis.publish(channels.notifications, JSON.stringify(otherTenant));
  await redis.publish(`${channels.telemetryPrefix}${allowedBuilding}`, JSON.stringify(allowedReading));
  await redis.publish(channels.notifications, JSON.stringify(ours));
  await redis.publish(channels.notifications, JSON.stringify(broadcast));

  await page.waitForFunction((id) => (globalThis as unknown as PageGlobals).relay.notifications.some((n) => n.id === id), broadcast.id, { timeout: 10_000 });
  const received = await page.evaluate(() => {
    const { telemetry, notifications } = (globalThis as unknown as PageGlobals).relay;
    return { telemetry, notifications };
  });
  t.same(received.telemetry, [allowedReading], 'only the subscribed building’s telemetry arrived, as published');
  t.notOk('internalNote' in allowedReading, 'the published reading carries the declared fields only');
  t.same(received.notifications, [ours, broadcast], 'the domain’s notification and the system-wide one; not the other tenant’s');

  // What the page rendered from those events.
  t.same(await page.locator('#telemetry tbody tr').allTextContents(), [`${allowedBuilding}room-101temperature27.5`]);
  t.same(await page.locator('#notifications li').allTextContents(), ['[warning] Temperature high: Room 101 is above 26 °C', '[info] Maintenance: Platform maintenance at 22:00']);
  t.same(await page.locator('#subscriptions li').allTextContents(), [`${allowedBuilding}: live`, `${forbiddenBuilding}: refused (forbidden)`]);
  t.match(await page.locator('#status').textContent(), /^connected$/);

  const shot = screenshotPath('relay.png');
  await page.screenshot({ path: shot, fullPage: true });
  const png = readFileSync(shot);
  t.same([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'the page rendered to a PNG screenshot');
  t.comment(`screenshot: ${shot} (${png.length} bytes)`);

  // After unsubscribe_building the building's telemetry stops.
  await page.evaluate((id) => (globalThis as unknown as PageGlobals).relay.unsubscribe(id), allowedBuilding);
  await waitFor(() => buildingRoomSize(allowedBuilding) === 0, 'the socket to leave the building room');
  const fence = notification({ domainName: domainA, title: 'fence' });
  await redis.publish(`${channels.telemetryPrefix}${allowedBuilding}`, JSON.stringify(reading(allowedBuilding, 28)));
  await redis.publish(channels.notifications, JSON.stringify(fence));
  await page.waitForFunction((id) => (globalThis as unknown as PageGlobals).relay.notifications.some((n) => n.id === id), fence.id, { timeout: 10_000 });
  t.equal(await page.evaluate(() => (globalThis as unknown as PageGlobals).relay.telemetry.length), 1, 'no telemetry after unsubscribing');
  t.same(await page.evaluate(() => (globalThis as unknown as PageGlobals).relay.disconnects), [], 'the socket stayed connected throughout');
  t.same(await scrape('socket_subscriptions_rejected_total', { reason: 'forbidden' }), 1);

  t.same(errors, [], 'no script errors on the page');
});

t.test('a page without the cookie gets connect_error unauthorized', async (t) => {
  const before = await scrape('socket_connections_rejected_total');
  const context = await profile(browser);
  t.teardown(() => context.close());
  const upgradesBefore = mesh.records.length;
  const { page, errors } = await openPage(context, pageUrl(frontendServer.url));

  await page.waitForFunction(() => (globalThis as unknown as PageGlobals).relay.status !== 'connecting', undefined, { timeout: 10_000 });
  const state = await page.evaluate(() => {
    const { status, connectError } = (globalThis as unknown as PageGlobals).relay;
    return { status, connectError };
  });
  t.same(state, { status: 'rejected', connectError: 'unauthorized' });
  t.match(await page.locator('#status').textContent(), /^rejected: unauthorized$/, 'the page shows the refusal');
  const handshakes = mesh.records.slice(upgradesBefore).filter((r) => r.kind === 'upgrade');
  t.ok(handshakes.length > 0 && handshakes.every((r) => r.token === undefined && r.injected === undefined), 'no cookie, so the mesh injected no claims');
  t.equal(await scrape('socket_connections_rejected_total'), before + 1, 'the refusal is counted');
  t.same(errors, []);
});

t.test('credentialed CORS is granted to FRONTEND_URL only; a page of another origin cannot ride on the cookie', async (t) => {
  const context = await profile(browser, anaToken);
  t.teardown(() => context.close());

  const own = await openPage(context, pageUrl(frontendServer.url));
  await own.page.waitForFunction(() => (globalThis as unknown as PageGlobals).relay.status === 'connected', undefined, { timeout: 10_000 });
  const probe = await own.page.evaluate(() => (globalThis as unknown as PageGlobals).relay.probeCors());
  t.equal(probe.ok, true, `the frontend reads a credentialed cross-origin answer of the relay (${probe.error ?? ''})`);
  t.equal(probe.status, 200);
  t.match(probe.body, /^0\{"sid":/, 'the polling handshake answer');
  t.ok(mesh.records.some((r) => r.kind === 'http' && r.path.startsWith('/socket.io/') && r.token === anaToken), 'fetch with credentials sent the cookie');

  const foreignRejectedBefore = await scrape('socket_connections_rejected_total');
  const foreign = await openPage(context, pageUrl(foreignServer.url));
  await foreign.page.waitForFunction(() => (globalThis as unknown as PageGlobals).relay.status !== 'connecting', undefined, { timeout: 10_000 });
  const state = await foreign.page.evaluate(() => {
    const { status, connectError, notifications } = (globalThis as unknown as PageGlobals).relay;
    return { status, connectError, notifications };
  });
  t.equal(state.status, 'rejected', 'a page of another origin does not connect, although the browser sent the cookie');
  t.not(state.connectError, null);
  const crossProbe = await foreign.page.evaluate(() => (globalThis as unknown as PageGlobals).relay.probeCors());
  t.equal(crossProbe.ok, false, 'the browser withholds the relay’s answer from another origin');
  t.equal(await scrape('socket_connections_rejected_total'), foreignRejectedBefore, 'refused before the handshake, not as a bad claims header');

  // A broadcast reaches the frontend's socket but never the foreign page.
  const broadcast = notification({ kind: 'manual', severity: 'info', title: 'Broadcast', message: 'to everyone connected' });
  await redis.publish(channels.notifications, JSON.stringify(broadcast));
  await own.page.waitForFunction((id) => (globalThis as unknown as PageGlobals).relay.notifications.some((n) => n.id === id), broadcast.id, { timeout: 10_000 });
  t.same(await foreign.page.evaluate(() => (globalThis as unknown as PageGlobals).relay.notifications), []);
  t.same(own.errors, []);
  t.same(foreign.errors.filter((e) => e.startsWith('pageerror')), []);
});
