/**
 * Connection pools per device origin are bounded. Device commands once went out through an undici
 * Agent, which keeps a Pool (~20 KiB: a queue of 2048 slots, its own connector and TLS session cache)
 * for every origin it ever dispatched to, for the life of the process: every sensor endpoint on another
 * host or port ever commanded, unreachable ones included. The device dispatcher keeps the pools of its
 * most recently commanded origins only, closing the others, and its pools share one connector.
 *
 * Each device is a loopback fake on a port of its own: one distinct origin each. undici's diagnostics
 * channel tells which connections were made, to which port, by which connector.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { once } from 'node:events';
import type { Socket } from 'node:net';
import t from 'tap';
import { request } from 'undici';
import { createDeviceAdapter, type DeviceCommand, type RegisteredSensor } from '../../../shared/devices/adapter.js';
import { loadBindingCatalog } from '../../../shared/devices/bindings.js';
import { createDeviceDispatcher } from '../../../shared/devices/dispatcher.js';
import { startFakeDevice, type FakeDevice } from '../../support/fake-device.js';

const HOLD = '/api/v1/thermostat/hold';

const setTarget = (sensorId: string): DeviceCommand => ({ metric: 'temperature', buildingId: 'b1', roomId: 'r1', sensorId, action: 'setTarget', arguments: { target: 21.5 } });

interface Connection {
  port: number;
  socket: Socket;
  connector: unknown;
}

/** The connections undici made while the test ran (its `undici:client:connected` channel). */
function connectionsMade(t: { teardown(fn: () => unknown): void }): Connection[] {
  const made: Connection[] = [];
  const onConnected = (message: unknown) => {
    const { connectParams, socket, connector } = message as { connectParams: { port: unknown }; socket: Socket; connector: unknown };
    made.push({ port: Number(connectParams.port), socket, connector });
  };
  subscribe('undici:client:connected', onConnected);
  t.teardown(() => unsubscribe('undici:client:connected', onConnected));
  return made;
}

/** Fake devices on ports of their own, each accepting a hold, and an adapter whose sensor `stat-i` is device i. */
async function devicesOnDistinctOrigins(t: Parameters<typeof startFakeDevice>[0], count: number, maxOrigins: number) {
  const devices: FakeDevice[] = [];
  for (let i = 0; i < count; i++) {
    const device = await startFakeDevice(t);
    device.on('POST', HOLD, 204, '');
    devices.push(device);
  }
  const dispatcher = createDeviceDispatcher({ timeoutMs: 5000, maxOrigins });
  t.teardown(() => dispatcher.destroy());
  const sensors: RegisteredSensor[] = devices.map((device, i) => ({
    sensorId: `stat-${i}`,
    buildingId: 'b1',
    roomId: 'r1',
    metric: 'temperature',
    driver: 'ecobee-local-thermostat',
    endpoint: device.url,
  }));
  const adapter = createDeviceAdapter({
    catalog: await loadBindingCatalog(),
    sensors: { sensorOf: async (_b, _r, sensorId) => sensors.find((s) => s.sensorId === sensorId) },
    timeoutMs: 5000,
    dispatcher,
  });
  return { devices, dispatcher, adapter };
}

const closed = (socket: Socket) => (socket.destroyed ? Promise.resolve() : once(socket, 'close').then(() => undefined));

t.test('commands to more device origins than the cap all arrive, and the pools kept stay at the cap', async (t) => {
  const connections = connectionsMade(t);
  const { devices, dispatcher, adapter } = await devicesOnDistinctOrigins(t, 6, 3);

  const kept: number[] = [];
  for (const round of [1, 2]) {
    for (const i of devices.keys()) {
      t.same(await adapter.execute(setTarget(`stat-${i}`)), { accepted: true }, `round ${round}, device ${i}: accepted`);
      kept.push(dispatcher.originsKept);
    }
  }
  t.same(kept, [1, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3], 'never more pools than the cap, whatever the number of device origins');
  t.same(devices.map((d) => d.calls.length), [2, 2, 2, 2, 2, 2], 'every command reached its device, evicted origins included');
  const toDevice = (device: FakeDevice) => connections.filter((c) => c.port === device.port);
  t.same(devices.map((d) => toDevice(d).length), [2, 2, 2, 2, 2, 2], 'each device was connected to again after its pool was closed');
  t.equal(new Set(connections.map((c) => c.connector)).size, 1, 'every pool connected through the one connector built for the dispatcher');

  // The last round evicted the first three origins: their pools are closed, and so their connections.
  await Promise.all(devices.slice(0, 3).map((d) => closed(toDevice(d)[1]!.socket)));
  t.pass('the connections of the evicted pools are closed');
});

t.test('destroy keeps no pool, closes every connection, and later commands are not sent', async (t) => {
  const connections = connectionsMade(t);
  const { devices, dispatcher, adapter } = await devicesOnDistinctOrigins(t, 2, 1);

  for (const i of devices.keys()) t.same(await adapter.execute(setTarget(`stat-${i}`)), { accepted: true }, `device ${i}: accepted`);
  await dispatcher.destroy();
  t.equal(dispatcher.originsKept, 0, 'no pool is kept once destroyed');
  t.ok(dispatcher.destroyed, 'the dispatcher says it is destroyed');
  await Promise.all(connections.map((c) => closed(c.socket)));
  t.pass('every connection it made is closed, the evicted pool\'s too');

  await t.rejects(adapter.execute(setTarget('stat-0')), { code: 'device_unreachable', status: 502 }, 'a command after destroy is unreachable');
  t.same(devices.map((d) => d.calls.length), [1, 1], 'and was not sent');
  t.equal(dispatcher.originsKept, 0, 'and made no pool');
});

t.test('close lets a command in flight finish, then refuses the next without sending it', async (t) => {
  const { devices, dispatcher } = await devicesOnDistinctOrigins(t, 1, 4);
  const device = devices[0]!;

  // undici's request dispatches at once, so the command is in the pool when close is called.
  const inFlight = request(`${device.url}${HOLD}`, { method: 'POST', body: '{}', dispatcher });
  const closing = dispatcher.close();
  t.ok(dispatcher.closed, 'the dispatcher says it is closed');
  const response = await inFlight;
  await response.body.dump();
  t.equal(response.statusCode, 204, 'the command in flight was answered');
  await closing;
  t.equal(dispatcher.originsKept, 0, 'no pool is kept once closed');

  await t.rejects(request(`${device.url}${HOLD}`, { method: 'POST', body: '{}', dispatcher }), { name: 'ClientDestroyedError' }, 'a command after close is refused');
  t.equal(device.calls.length, 1, 'and was not sent');
});
