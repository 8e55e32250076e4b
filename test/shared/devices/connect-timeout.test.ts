/**
 * The adapter's timeout covers the whole request, connecting included. undici 6 acts on an abort
 * signal only once the request has a connected socket, so a device whose host drops SYNs (or whose
 * name never resolves) once held the caller until undici's own 10 s connect timeout, whatever
 * `timeoutMs` said. A real listener whose accept queue is full stands for the device: the kernel drops
 * the SYNs of new connections to it.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import t from 'tap';
import { Agent } from 'undici';
import { createDeviceAdapter, type DeviceCommand } from '../../../shared/devices/adapter.js';
import { loadBindingCatalog } from '../../../shared/devices/bindings.js';
import { unacceptingUrl } from '../../cloud/chat/support/unaccepting-listener.js';

const command: DeviceCommand = { metric: 'temperature', buildingId: 'b1', roomId: 'r1', sensorId: 's1', action: 'setTarget', arguments: { target: 21.5 } };

/**
 * Counts undici's connection attempts to `port` (its diagnostics channels): begun, and ended either way.
 * Unsubscribed at teardown.
 */
function connectAttemptsTo(t: { teardown(fn: () => unknown): void }, port: number) {
  const attempts = { begun: 0, ended: 0 };
  const toPort = (message: unknown) => Number((message as { connectParams?: { port?: unknown } }).connectParams?.port) === port;
  const onBegin = (message: unknown) => {
    if (toPort(message)) attempts.begun++;
  };
  const onEnd = (message: unknown) => {
    if (toPort(message)) attempts.ended++;
  };
  subscribe('undici:client:beforeConnect', onBegin);
  subscribe('undici:client:connected', onEnd);
  subscribe('undici:client:connectError', onEnd);
  t.teardown(() => {
    unsubscribe('undici:client:beforeConnect', onBegin);
    unsubscribe('undici:client:connected', onEnd);
    unsubscribe('undici:client:connectError', onEnd);
  });
  return attempts;
}

t.test('a device that never completes the connection is unreachable once the timeout passes', async (t) => {
  const url = await unacceptingUrl(t);
  const attempts = connectAttemptsTo(t, Number(new URL(url).port));
  // undici's own connect timeout, far past the adapter's: without the fix the command fails by its hand,
  // once the connection attempt has ended, and the test says so.
  const agent = new Agent({ connect: { timeout: 10_000 } });
  t.teardown(() => agent.destroy());
  const sensors = {
    sensorOf: async () => ({ sensorId: 's1', buildingId: 'b1', roomId: 'r1', metric: 'temperature', driver: 'ecobee-local-thermostat', endpoint: url }),
  };
  const adapter = createDeviceAdapter({ catalog: await loadBindingCatalog(), sensors, timeoutMs: 50, dispatcher: agent });
  await t.rejects(adapter.execute(command), { code: 'device_unreachable', status: 502, message: 'the device could not be reached' });
  t.equal(attempts.begun, 1, 'the request did go out to connect to the device');
  t.equal(attempts.ended, 0, 'the adapter gave up by its own timeout, while the connection attempt was still pending');
});
