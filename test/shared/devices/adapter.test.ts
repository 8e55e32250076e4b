import t from 'tap';
import { createServer } from 'node:http';
import { listen, closeServer } from '../../../shared/lifecycle.js';
import { serve } from '../../support/http.js';
import { startFakeDevice } from '../../support/fake-device.js';
import {
  DeviceCommandError,
  createDeviceAdapter,
  planDeviceRequest,
  type DeviceCommand,
  type RegisteredSensor,
  type SensorLookup,
} from '../../../shared/devices/adapter.js';
import { loadBindingCatalog, type DeviceBinding } from '../../../shared/devices/bindings.js';

const setTarget: DeviceBinding = { path: '/api/v1/thermostat/hold', method: 'POST', fields: { target: 'holdTemp' }, transport: 'http' };

t.test('planDeviceRequest: endpoint + binding path, arguments renamed', async (t) => {
  t.same(planDeviceRequest('http://10.0.4.21:8089', setTarget, { target: 21.5 }), { url: 'http://10.0.4.21:8089/api/v1/thermostat/hold', method: 'POST', body: { holdTemp: 21.5 } });
  t.same(planDeviceRequest('http://zgw.local:8080/api/devices/0x00158d/', { path: '/set', method: 'PUT', fields: { target: 'sp' }, transport: 'http' }, { target: 19 }), {
    url: 'http://zgw.local:8080/api/devices/0x00158d/set',
    method: 'PUT',
    body: { sp: 19 },
  }, 'the endpoint path is kept, one slash between');
  t.same(planDeviceRequest('https://stat.local', { path: '/up', method: 'POST', fields: { step: 'delta' }, transport: 'http' }, {}).body, {}, 'no argument: an empty JSON object');
  t.same(planDeviceRequest('http://stat.local', { path: '/up', method: 'POST', fields: {}, transport: 'http' }, { step: 2 }).body, {}, 'an argument the binding does not map is not sent');
});

t.test('planDeviceRequest: anything but http(s) is a vague 500', async (t) => {
  for (const endpoint of ['file:///etc/passwd', 'gopher://10.0.0.1:70/', 'ftp://stat.local', 'javascript:alert(1)', 'not a url', '']) {
    const err = t.throws(() => planDeviceRequest(endpoint, setTarget, { target: 20 })) as DeviceCommandError;
    t.equal(err.status, 500, endpoint);
    t.equal(err.message, 'the device command could not be sent', 'says nothing of the endpoint');
    t.notMatch(err.message, endpoint || '\u0000');
  }
});

/** What every route of the fake device answers with: a device detail that must never reach an error message. */
const DETAIL = '{"secretDeviceDetail":"firmware 1.2.3"}';

function lookup(sensors: RegisteredSensor[]): SensorLookup & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    async sensorOf(buildingId, roomId, sensorId) {
      asked.push(`${buildingId}/${roomId}/${sensorId}`);
      return sensors.find((s) => s.buildingId === buildingId && s.roomId === roomId && s.sensorId === sensorId);
    },
  };
}

const command: DeviceCommand = { metric: 'temperature', buildingId: 'b1', roomId: 'r1', sensorId: 's1', action: 'setTarget', arguments: { target: 21.5 } };

t.test('execute: validated, resolved, renamed, sent as JSON; 2xx is accepted', async (t) => {
  const dev = await startFakeDevice(t);
  dev.on('POST', '/api/v1/thermostat/hold', 204, DETAIL);
  dev.on('POST', '/api/v1/thermostat/setpoint/up', 204, DETAIL);
  const sensors = lookup([{ sensorId: 's1', buildingId: 'b1', roomId: 'r1', metric: 'temperature', driver: 'ecobee-local-thermostat', endpoint: dev.url }]);
  const adapter = createDeviceAdapter({ catalog: await loadBindingCatalog(), sensors });
  t.same(await adapter.execute(command), { accepted: true });
  t.same(await adapter.execute({ ...command, action: 'increase', arguments: {} }), { accepted: true });
  t.same(dev.calls, [
    { method: 'POST', path: '/api/v1/thermostat/hold', contentType: 'application/json', body: { holdTemp: 21.5 } },
    { method: 'POST', path: '/api/v1/thermostat/setpoint/up', contentType: 'application/json', body: {} },
  ]);
  t.same(dev.unexpected, [], 'no call the device was not set up for');
});

t.test('execute: each failure has its code and status, and no device detail', async (t) => {
  const failing = await startFakeDevice(t);
  failing.on('PATCH', '/setpoint', 500, DETAIL);
  const catalog = await loadBindingCatalog();
  const sensors = lookup([
    { sensorId: 's1', buildingId: 'b1', roomId: 'r1', metric: 'temperature', driver: 'honeywell-lcc-thermostat', endpoint: failing.url },
    { sensorId: 's2', buildingId: 'b1', roomId: 'r1', metric: 'temperature', driver: 'unknown-stat', endpoint: failing.url },
    { sensorId: 'p1', buildingId: 'b1', roomId: 'r1', metric: 'peopleCount', driver: 'honeywell-lcc-thermostat', endpoint: failing.url },
    { sensorId: 's3', buildingId: 'b1', roomId: 'r1', metric: 'temperature', driver: 'honeywell-lcc-thermostat', endpoint: 'file:///etc/passwd' },
  ]);
  const adapter = createDeviceAdapter({ catalog, sensors, timeoutMs: 1000 });
  const expectError = async (cmd: typeof command, code: string, status: number) => {
    const err = (await adapter.execute(cmd).then(
      () => undefined,
      (e: unknown) => e,
    )) as DeviceCommandError;
    t.type(err, DeviceCommandError, code);
    t.equal(err.code, code);
    t.equal(err.status, status);
    t.notMatch(err.message, /firmware|500|127\.0\.0\.1|passwd/, 'no device status, body or address');
    return err;
  };
  await expectError({ ...command, metric: 'radiation' }, 'unknown_metric', 404);
  await expectError({ ...command, action: 'fly' }, 'unknown_action', 404);
  await expectError({ ...command, metric: 'peopleCount', sensorId: 'p1' }, 'unknown_action', 404);
  const bad = await expectError({ ...command, arguments: { target: 'warm' } }, 'invalid_arguments', 400);
  t.same(bad.errors, [{ field: 'target', message: 'expected a finite number, got "warm"' }]);
  await expectError({ ...command, arguments: {} }, 'invalid_arguments', 400);
  await expectError({ ...command, arguments: { target: 20, url: 'http://evil.test' } }, 'invalid_arguments', 400);
  t.equal(sensors.asked.length, 0, 'arguments are checked before any sensor is looked up');
  await expectError({ ...command, sensorId: 'nope' }, 'no_sensor', 404);
  await expectError({ ...command, roomId: 'r2' }, 'no_sensor', 404);
  await expectError({ ...command, action: 'increase', arguments: {} }, 'no_binding', 404);
  await expectError({ ...command, sensorId: 's2' }, 'no_binding', 404);
  await expectError({ ...command, sensorId: 's3' }, 'bad_endpoint', 500);
  t.same(failing.calls, [], 'nothing reached the device so far');
  t.same(failing.unexpected, []);
  await expectError(command, 'device_rejected', 502);
  t.same(failing.calls, [{ method: 'PATCH', path: '/setpoint', contentType: 'application/json', body: { heatSetpoint: 21.5 } }], "the honeywell binding's method, path and field, sent as JSON");
  t.same(failing.unexpected, [], 'no call the device was not set up for');
});

t.test('execute: an unreachable device and a device that never answers are 502', async (t) => {
  // Port 9 (discard): nothing listens there, and no test binds it, unlike a port freed here for the purpose.
  const refusing = 'http://127.0.0.1:9';
  const hanging = createServer(() => undefined);
  const hangPort = await listen(hanging, 0, '127.0.0.1');
  t.teardown(() => {
    hanging.closeAllConnections();
    return closeServer(hanging);
  });
  const sensors = lookup([
    { sensorId: 's1', buildingId: 'b1', roomId: 'r1', metric: 'temperature', driver: 'ecobee-local-thermostat', endpoint: refusing },
    { sensorId: 's2', buildingId: 'b1', roomId: 'r1', metric: 'temperature', driver: 'ecobee-local-thermostat', endpoint: `http://127.0.0.1:${hangPort}` },
  ]);
  const adapter = createDeviceAdapter({ catalog: await loadBindingCatalog(), sensors, timeoutMs: 300 });
  await t.rejects(adapter.execute(command), { code: 'device_unreachable', status: 502, message: 'the device could not be reached' });
  await t.rejects(adapter.execute({ ...command, sensorId: 's2' }), { code: 'device_unreachable', status: 502 }, 'the timeout ends the wait');
});

t.test('execute: a redirect from the device is not followed', async (t) => {
  const target = await startFakeDevice(t);
  target.on('POST', '/stolen', 200, DETAIL);
  target.on('GET', '/stolen', 200, DETAIL);
  const redirecting = await startFakeDevice(t);
  redirecting.on('POST', '/api/v1/thermostat/hold', 307, DETAIL, { location: `${target.url}/stolen` });
  const sensors = lookup([{ sensorId: 's1', buildingId: 'b1', roomId: 'r1', metric: 'temperature', driver: 'ecobee-local-thermostat', endpoint: redirecting.url }]);
  const adapter = createDeviceAdapter({ catalog: await loadBindingCatalog(), sensors });
  await t.rejects(adapter.execute(command), { code: 'device_rejected', status: 502 });
  t.same(redirecting.calls, [{ method: 'POST', path: '/api/v1/thermostat/hold', contentType: 'application/json', body: { holdTemp: 21.5 } }]);
  t.same(target.calls, [], 'the redirect target was never called');
  t.same([...redirecting.unexpected, ...target.unexpected], [], 'no call either was not set up for');
});

t.test('execute: an optional argument given as null is not sent, as when it is left out', async (t) => {
  // The field check treats null like a missing optional argument; the device must see the same
  // empty body, not `{"delta": null}`, so it applies its own default step.
  const dev = await startFakeDevice(t);
  dev.on('POST', '/api/v1/thermostat/setpoint/up', 204);
  const sensors = lookup([{ sensorId: 's1', buildingId: 'b1', roomId: 'r1', metric: 'temperature', driver: 'ecobee-local-thermostat', endpoint: dev.url }]);
  const adapter = createDeviceAdapter({ catalog: await loadBindingCatalog(), sensors });
  t.same(await adapter.execute({ ...command, action: 'increase', arguments: { step: null } }), { accepted: true });
  t.same(dev.calls, [{ method: 'POST', path: '/api/v1/thermostat/setpoint/up', contentType: 'application/json', body: {} }]);
});

t.test('execute: credentials in a registered endpoint reach the device as Basic authorization', async (t) => {
  const seen: Array<{ authorization: string | undefined; url: string | undefined }> = [];
  const { url } = await serve(t, (req, res) => {
    seen.push({ authorization: req.headers.authorization, url: req.url });
    req.resume().on('end', () => res.writeHead(req.headers.authorization ? 204 : 401).end());
  });
  const endpoint = url.replace('http://', 'http://op%40site:p%C3%A4ss%3Aword@');
  const sensors = lookup([{ sensorId: 's1', buildingId: 'b1', roomId: 'r1', metric: 'temperature', driver: 'ecobee-local-thermostat', endpoint }]);
  const adapter = createDeviceAdapter({ catalog: await loadBindingCatalog(), sensors });
  t.same(await adapter.execute(command), { accepted: true });
  t.same(seen, [{ authorization: `Basic ${Buffer.from('op@site:päss:word').toString('base64')}`, url: '/api/v1/thermostat/hold' }], 'decoded user and password, nothing in the path');
  const plan = planDeviceRequest(endpoint, setTarget, { target: 20 });
  t.notMatch(plan.url, /op|word|@/, 'the planned URL carries no credentials');
  t.throws(() => planDeviceRequest('http://op%zz:pw@stat.local', setTarget, { target: 20 }), { code: 'bad_endpoint', status: 500 }, 'a user that is not valid percent-encoding is a vague 500');
});
