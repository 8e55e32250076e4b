/**
 * A binding that maps a parameter to the device field `__proto__` once passed the catalog check, but
 * `body['__proto__'] = value` on a plain object sets its prototype (or, for a number, nothing at all):
 * the device got `{}` and the command was reported accepted.
 */
import t from 'tap';
import { startFakeDevice } from '../../support/fake-device.js';
import { createDeviceAdapter, type DeviceCommand } from '../../../shared/devices/adapter.js';
import { BindingCatalogError, bindingCatalogFrom, parseDriverBindings, type BindingCatalog, type DeviceBinding } from '../../../shared/devices/bindings.js';

const command: DeviceCommand = { metric: 'temperature', buildingId: 'b1', roomId: 'r1', sensorId: 's1', action: 'setTarget', arguments: { target: 21.5 } };

t.test('a binding naming __proto__ as a device field is refused at load, with its path', async (t) => {
  t.same(parseDriverBindings('acme.json', { setTarget: { path: '/sp', fields: { target: '__proto__' } } }), {
    ok: false,
    problems: [
      'acme.json: setTarget.fields.target: "__proto__" cannot be a device field name: JavaScript treats it as the object\'s prototype, not a field, so the value would silently not be sent',
      'acme.json: setTarget.fields: the required parameter target has no device field',
    ],
  });
  t.throws(() => bindingCatalogFrom({ acme: { setTarget: { path: '/sp', fields: { target: '__proto__' } } } }), BindingCatalogError);
  for (const name of ['constructor', 'prototype', 'toString', 'hasOwnProperty']) {
    t.ok(parseDriverBindings('acme.json', { setTarget: { path: '/sp', fields: { target: name } } }).ok, `${name} is a plain field name`);
  }
});

t.test('whatever a binding names its device fields, each argument reaches the device under that name', async (t) => {
  // A catalog built by hand, bypassing the load check: the adapter itself must not lose a field.
  const dev = await startFakeDevice(t);
  dev.on('POST', '/sp', 204);
  const bindings: Record<string, DeviceBinding> = {
    setTarget: { path: '/sp', method: 'POST', fields: { target: '__proto__' }, transport: 'http' },
    increase: { path: '/sp', method: 'POST', fields: { step: 'constructor' }, transport: 'http' },
  };
  const catalog: BindingCatalog = { driver: (name) => (name === 'odd-stat' ? bindings : undefined), drivers: () => ['odd-stat'] };
  const sensors = { sensorOf: async () => ({ sensorId: 's1', buildingId: 'b1', roomId: 'r1', metric: 'temperature', driver: 'odd-stat', endpoint: dev.url }) };
  const adapter = createDeviceAdapter({ catalog, sensors });
  t.same(await adapter.execute(command), { accepted: true });
  t.same(await adapter.execute({ ...command, action: 'increase', arguments: { step: 2 } }), { accepted: true });
  t.equal(dev.calls.length, 2);
  t.same(
    dev.calls.map((call) => JSON.stringify(call.body)),
    ['{"__proto__":21.5}', '{"constructor":2}'],
    'the device got each value under its field name',
  );
});
