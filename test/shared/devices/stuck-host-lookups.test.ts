/**
 * Device hosts whose DNS never answers. undici's connector looks a host up with dns.lookup, on libuv's
 * 4-thread pool, once per new connection, and the command's timeout cannot cancel the lookup. On the
 * global dispatcher, a few commands to such a device held every thread, and every other lookup of the
 * process (the building directory, PostgreSQL, Redis, Kafka) queued behind them. Through
 * createDeviceDispatcher, commands share one lookup per host, at most 2 run at once, and a host that did
 * not answer is not looked up again for a while: the process keeps threads for its other lookups.
 *
 * The resolver (an outside service) is injected: its lookups of `*.stuck.test` hold a real pool thread
 * and never answer; `localhost` goes to the real dns.lookup. The device is a loopback fake.
 */
import { lookup } from 'node:dns/promises';
import t, { type Test } from 'tap';
import { createDeviceAdapter, type DeviceCommand, type RegisteredSensor } from '../../../shared/devices/adapter.js';
import { loadBindingCatalog } from '../../../shared/devices/bindings.js';
import { createDeviceDispatcher } from '../../../shared/devices/dispatcher.js';
import { startFakeDevice } from '../../support/fake-device.js';
import { stuckResolver } from '../../support/stuck-resolver.js';

const HOLD = '/api/v1/thermostat/hold';

const setTarget = (sensorId: string): DeviceCommand => ({ metric: 'temperature', buildingId: 'b1', roomId: 'r1', sensorId, action: 'setTarget', arguments: { target: 21.5 } });

/** An adapter on the device dispatcher, with the stuck resolver, sensors on the given hosts and one on `localhost`. */
async function adapterWithStuckHosts(t: Test, stuckHosts: string[]) {
  const device = await startFakeDevice(t);
  const resolver = stuckResolver(t);
  const dispatcher = createDeviceDispatcher({ timeoutMs: 1000, resolve: resolver.resolve });
  t.teardown(() => dispatcher.destroy());
  const sensor = (sensorId: string, host: string): RegisteredSensor => ({
    sensorId,
    buildingId: 'b1',
    roomId: 'r1',
    metric: 'temperature',
    driver: 'ecobee-local-thermostat',
    endpoint: `http://${host}:${device.port}`,
  });
  const sensors = [...stuckHosts.map((host) => sensor(`stat-${host}`, host)), sensor('stat-local', 'localhost')];
  const adapter = createDeviceAdapter({
    catalog: await loadBindingCatalog(),
    sensors: { sensorOf: async (_b, _r, sensorId) => sensors.find((s) => s.sensorId === sensorId) },
    timeoutMs: 1000,
    dispatcher,
  });
  return { device, resolver, adapter };
}

const unreachable = { code: 'device_unreachable', status: 502, message: 'the device could not be reached' };

t.test('several commands to a device whose name never resolves hold one lookup thread; the process still looks names up', async (t) => {
  const { device, resolver, adapter } = await adapterWithStuckHosts(t, ['stat.stuck.test']);

  // Commands at once: a connection each, and each connection looks the host up.
  const together = await Promise.allSettled([1, 2, 3].map(() => adapter.execute(setTarget('stat-stat.stuck.test'))));
  for (const outcome of together) t.match(outcome, { status: 'rejected', reason: unreachable }, 'a command at once to the stuck device is unreachable');
  // Then one by one, as a user clicking again.
  for (let i = 0; i < 3; i++) await t.rejects(adapter.execute(setTarget('stat-stat.stuck.test')), unreachable, 'a later command to it is unreachable');
  t.same(resolver.stuck, ['stat.stuck.test'], 'the stuck host was looked up once: one thread held, not one per command');

  const local = await lookup('localhost');
  t.ok(local.address, 'a lookup elsewhere in the process still gets a thread and answers');

  device.on('POST', HOLD, 204, '');
  t.same(await adapter.execute(setTarget('stat-local')), { accepted: true }, 'a command to a device whose name resolves is accepted');
  t.equal(device.calls.length, 1, 'and reached the device');
  t.same(resolver.unexpected, [], 'no other name was looked up');
});

t.test('devices on several names that never resolve hold at most two lookup threads', async (t) => {
  const hosts = ['a.stuck.test', 'b.stuck.test', 'c.stuck.test', 'd.stuck.test'];
  const { resolver, adapter } = await adapterWithStuckHosts(t, hosts);

  const outcomes = await Promise.allSettled(hosts.flatMap((host) => [1, 2].map(() => adapter.execute(setTarget(`stat-${host}`)))));
  for (const outcome of outcomes) t.match(outcome, { status: 'rejected', reason: unreachable }, 'a command to a stuck device is unreachable');
  t.equal(resolver.stuck.length, 2, 'two lookups were started: the device lookup slots');
  t.equal(new Set(resolver.stuck).size, 2, 'of two distinct hosts');

  const local = await lookup('localhost');
  t.ok(local.address, 'a lookup elsewhere in the process still gets a thread and answers');
  t.same(resolver.unexpected, [], 'no other name was looked up');
});
