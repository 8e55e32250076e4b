/**
 * The adapter's timeout covers the whole request, connecting included. undici 6 acts on an abort
 * signal only once the request has a connected socket, so a device whose host drops SYNs (or whose
 * name never resolves) once held the caller until undici's own 10 s connect timeout, whatever
 * `timeoutMs` said.
 */
import t from 'tap';
import { Agent } from 'undici';
import { createDeviceAdapter, type DeviceCommand } from '../../../shared/devices/adapter.js';
import { loadBindingCatalog } from '../../../shared/devices/bindings.js';

const command: DeviceCommand = { metric: 'temperature', buildingId: 'b1', roomId: 'r1', sensorId: 's1', action: 'setTarget', arguments: { target: 21.5 } };

t.test('a device that never completes the connection is unreachable once the timeout passes', async (t) => {
  // A real undici Agent whose connector never connects, standing for a SYN that gets no answer. It gives
  // up after 20 s, so that without the fix the command fails by the connector's hand, and the test says so.
  let connectAttempts = 0;
  let connectorGaveUp = false;
  const fallbacks: NodeJS.Timeout[] = [];
  const neverConnects = new Agent({
    connect: (_options, callback) => {
      connectAttempts++;
      fallbacks.push(
        setTimeout(() => {
          connectorGaveUp = true;
          callback(new Error('the test connector gave up after 20 s'), null);
        }, 20_000),
      );
    },
  });
  t.teardown(async () => {
    for (const timer of fallbacks) clearTimeout(timer);
    await neverConnects.destroy();
  });
  const sensors = {
    sensorOf: async () => ({ sensorId: 's1', buildingId: 'b1', roomId: 'r1', metric: 'temperature', driver: 'ecobee-local-thermostat', endpoint: 'http://10.255.255.1:8089' }),
  };
  const adapter = createDeviceAdapter({ catalog: await loadBindingCatalog(), sensors, timeoutMs: 50, dispatcher: neverConnects });
  await t.rejects(adapter.execute(command), { code: 'device_unreachable', status: 502, message: 'the device could not be reached' });
  t.equal(connectAttempts, 1, 'the request did go to the dispatcher');
  t.equal(connectorGaveUp, false, 'the adapter gave up by its own timeout, not when the connection attempt ended');
});
