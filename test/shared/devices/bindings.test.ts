import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { temperature } from '../../../shared/catalog/metrics.js';
import {
  BindingCatalogError,
  bindingCatalogFrom,
  capabilitiesOf,
  loadBindingCatalog,
  parseDriverBindings,
  pathProblem,
} from '../../../shared/devices/bindings.js';

t.test('the shipped catalog loads: at least two thermostat families, every action a temperature action', async (t) => {
  const catalog = await loadBindingCatalog();
  t.same(catalog.drivers(), ['ecobee-local-thermostat', 'honeywell-lcc-thermostat', 'zigbee-rest-thermostat']);
  const ecobee = catalog.driver('ecobee-local-thermostat');
  t.same(ecobee?.setTarget, { path: '/api/v1/thermostat/hold', method: 'POST', fields: { target: 'holdTemp' }, transport: 'http' }, 'method and transport take their defaults');
  t.same(catalog.driver('zigbee-rest-thermostat')?.setTarget, { path: '/set', method: 'PUT', fields: { target: 'occupied_heating_setpoint' }, transport: 'http' });
  t.equal(catalog.driver('no-such-driver'), undefined);
  t.equal(catalog.driver('__proto__'), undefined, 'no prototype keys');
});

t.test('capability is the metric actions a driver binds', async (t) => {
  const catalog = await loadBindingCatalog();
  t.same(capabilitiesOf(temperature, catalog.driver('zigbee-rest-thermostat')).map((a) => a.name), ['setTarget', 'increase', 'decrease']);
  t.same(capabilitiesOf(temperature, catalog.driver('honeywell-lcc-thermostat')).map((a) => a.name), ['setTarget']);
  t.same(capabilitiesOf(temperature, undefined), [], 'an unknown driver has none');
  const custom = bindingCatalogFrom({ 'raise-only': { increase: { path: '/up' } } });
  t.same(capabilitiesOf(temperature, custom.driver('raise-only')).map((a) => a.name), ['increase']);
});

t.test('every problem of a bad file is reported at once, with its path', async (t) => {
  const parsed = parseDriverBindings('acme.json', {
    $comment: 'ignored',
    fly: { path: '/wings' },
    setTarget: { path: 'http://evil.test/x', method: 'GET', fields: { temp: 'sp' }, transport: 'mqtt', host: 'evil.test' },
    increase: { path: '/up', fields: { step: 'bad field!' } },
  });
  t.notOk(parsed.ok);
  if (!parsed.ok) {
    t.same(parsed.problems, [
      'acme.json: fly: not an action any metric declares (known: setTarget, increase, decrease)',
      'acme.json: setTarget.host: not a binding key (path, method, fields, transport)',
      'acme.json: setTarget.path: expected a path starting with a single "/", got "http://evil.test/x"',
      'acme.json: setTarget.method: expected one of POST, PUT, PATCH, got "GET"',
      'acme.json: setTarget.transport: expected "http", got "mqtt"',
      'acme.json: setTarget.fields.temp: not a parameter of setTarget (parameters: target)',
      'acme.json: setTarget.fields: the required parameter target has no device field',
      'acme.json: increase.fields.step: expected a device field name of letters, digits, "_", "." or "-", got "bad field!"',
    ]);
  }
  t.throws(() => bindingCatalogFrom({ 'Bad Name': {} }), BindingCatalogError);
  t.same(parseDriverBindings('x.json', [1]), { ok: false, problems: ['x.json: expected an object keyed by action name, got an array'] });
});

t.test('a binding path can never name or change a host', async (t) => {
  for (const bad of ['//evil.test/x', '\\\\evil.test', '/x@evil.test', '/a/../../b', '/a/%2e%2e/b', '/a/%2F/b', '/x#frag', 'x', '', '/a b', '/a\u0000']) {
    t.ok(pathProblem(bad), `refused: ${JSON.stringify(bad)}`);
  }
  for (const good of ['/', '/set', '/api/v1/thermostat/hold', '/control?cmd=setpoint']) t.equal(pathProblem(good), undefined, `accepted: ${good}`);
});

t.test('loading a folder reports unreadable JSON and bad bindings of every file', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bindings-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(path.join(dir, 'good-stat.json'), JSON.stringify({ setTarget: { path: '/sp', fields: { target: 'sp' } } }));
  await writeFile(path.join(dir, 'broken-stat.json'), '{ not json');
  await t.rejects(loadBindingCatalog(dir), { name: 'BindingCatalogError', problems: ['broken-stat.json: not valid JSON'] });
  await writeFile(path.join(dir, 'broken-stat.json'), JSON.stringify({ setTarget: { path: 'sp' } }));
  await t.rejects(loadBindingCatalog(dir), { name: 'BindingCatalogError', problems: ['broken-stat.json: setTarget.path: expected a path starting with a single "/", got "sp"', 'broken-stat.json: setTarget.fields: the required parameter target has no device field'] });
  await rm(path.join(dir, 'broken-stat.json'));
  t.same((await loadBindingCatalog(dir)).drivers(), ['good-stat']);
});
