import t, { type Test } from 'tap';
import { createServer } from 'node:http';
import { listen, closeServer } from '../../../shared/lifecycle.js';
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

/** A device on port 0 that records calls and answers `status`. */
async function device(t: Test, status: number) {
  const calls: Array<{ method: string; url: string; type: string | undefined; body: string }> = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      calls.push({ method: req.method ?? '', url: req.url ?? '', type: req.headers['content-type'], body });
      res.writeHead(status, { 'content-type': 'application/json' }).end('{"secretDeviceDetail":"firmware 1.2.3"}');
    });
  });
  const port = await listen(server, 0, '127.0.0.1');
  t.teardown(() => closeServer(server));
  return { calls, endpoint: `http://127.0.0.1:${port}` };
}

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
  const dev = await device(t, 204);
  const sensors = lookup([{ sensorId: 's1', buildingId: 'b1', roomId: 'r1', metric: 'temperature', driver: 'ecobee-local-thermostat', endpoint: dev.endpoint }]);
  const adapter = createDeviceAdapter({ catalog: await loadBindingCatalog(), sensors });
  t.same(await adapter.execute(command), { accepted: true });
  t.same(await adapter.execute({ ...command, action: 'increase', arguments: {} }), { accepted: true });
  t.same(dev.calls, [
    { method: 'POST', url: '/api/v1/thermostat/hold', type: 'application/json', body: '{"holdTemp":21.5}' },
    { method: 'POST', url: '/api/v1/thermostat/setpoint/up', type: 'application/json', body: '{}' },
  ]);
});

t.test('execute: each failure has its code and status, and no device detail', async (t) => {
  const failing = await device(t, 500);
  const catalog = await loadBindingCatalog();
  const sensors = lookup([
    { sensorId: 's1', buildingId: 'b1', roomId: 'r1', metric: 'temperature', driver: 'honeywell-lcc-thermostat', endpoint: failing.endpoint },
    { sensorId: 's2', buildingId: 'b1', roomId: 'r1', metric: 'temperature', driver: 'unknown-stat', endpoint: failing.endpoint },
    { sensorId: 'p1', buildingId: 'b1', roomId: 'r1', metric: 'peopleCount', driver: 'honeywell-lcc-thermostat', endpoint: failing.endpoint },
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
  t.equal(failing.calls.length, 0, 'nothing reached the device so far');
  await expectError(command, 'device_rejected', 502);
  t.equal(failing.calls.length, 1);
});

t.test('execute: an unreachable device and a device that never answers are 502', async (t) => {
  const closed = createServer();
  const port = await listen(closed, 0, '127.0.0.1');
  await closeServer(closed);
  const hanging = createServer(() => undefined);
  const hangPort = await listen(hanging, 0, '127.0.0.1');
  t.teardown(() => {
    hanging.closeAllConnections();
    return closeServer(hanging);
  });
  const sensors = lookup([
    { sensorId: 's1', buildingId: 'b1', roomId: 'r1', metric: 'temperature', driver: 'ecobee-local-thermostat', endpoint: `http://127.0.0.1:${port}` },
    { sensorId: 's2', buildingId: 'b1', roomId: 'r1', metric: 'temperature', driver: 'ecobee-local-thermostat', endpoint: `http://127.0.0.1:${hangPort}` },
  ]);
  const adapter = createDeviceAdapter({ catalog: await loadBindingCatalog(), sensors, timeoutMs: 300 });
  await t.rejects(adapter.execute(command), { code: 'device_unreachable', status: 502, message: 'the device could not be reached' });
  await t.rejects(adapter.execute({ ...command, sensorId: 's2' }), { code: 'device_unreachable', status: 502 }, 'the timeout ends the wait');
});

t.test('execute: a redirect from the device is not followed', async (t) => {
  const target = await device(t, 200);
  const redirecting = createServer((_req, res) => res.writeHead(307, { location: `${target.endpoint}/stolen` }).end());
  const port = await listen(redirecting, 0, '127.0.0.1');
  t.teardown(() => closeServer(redirecting));
  const sensors = lookup([{ sensorId: 's1', buildingId: 'b1', roomId: 'r1', metric: 'temperature', driver: 'ecobee-local-thermostat', endpoint: `http://127.0.0.1:${port}` }]);
  const adapter = createDeviceAdapter({ catalog: await loadBindingCatalog(), sensors });
  await t.rejects(adapter.execute(command), { code: 'device_rejected', status: 502 });
  t.equal(target.calls.length, 0, 'the redirect target was never called');
});
