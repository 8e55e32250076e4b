/**
 * A sensor's endpoint in the gateway config: a value that is not a URL is echoed to help the operator
 * fix it, unless it may hold a password; and an endpoint with a query or fragment, which the device
 * adapter would drop without a word, is refused as the cloud refuses it at registration.
 */
import t, { type Test } from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseConfig, type DialectInfo } from '../../../edge/src/config/index.js';

const dialects = new Map<string, DialectInfo>([['aruba-aos', { transport: 'snmp', namesApOfStation: true }]]);

const withSensors = (...endpoints: string[]) => `
buildingId: hq
pollIntervalS: 10
requestTimeoutS: 5
zones:
  lobby:
accessPoints:
  - { name: lobby-1, zone: lobby, dialect: aruba-aos, transport: snmp, host: 10.0.0.5, snmp: { version: 2c, communityFile: community } }
sensors:
${endpoints.map((endpoint, i) => `  - { sensorId: s${i}, zone: lobby, metric: temperature, driver: ecobee-local-thermostat, endpoint: ${JSON.stringify(endpoint)} }`).join('\n')}
`;

/** The errors of a config holding these sensor endpoints (the config must be refused). */
function errorsOf(t: Test, ...endpoints: string[]): string[] {
  const dir = t.testdir({});
  writeFileSync(join(dir, 'community'), 'public', { mode: 0o600 });
  const result = parseConfig(withSensors(...endpoints), join(dir, 'c.yaml'), { dialects });
  t.notOk(result.ok, 'the config is refused');
  return result.ok ? [] : result.errors;
}

t.test('an endpoint that is not a URL is not echoed when it may hold a password', async (t) => {
  const errors = errorsOf(t, 'http://gw:hunter2@host:80808/x', 'htps://admin:hunter2@10.0.4.21', 'ftp://op:hunter2@10.0.4.21/', 'http://:hunter2@');
  t.same(errors, [0, 1, 2, 3].map((i) => `sensors[${i}].endpoint: expected an http:// or https:// URL, got a value that is not one and holds "@" (not shown: it may hold a password)`));
  t.notOk(errors.join('\n').includes('hunter2'), 'no password on stderr or in the journal');
});

t.test('an endpoint that is not a URL and holds no "@" is still shown, to help fix a typo', async (t) => {
  t.same(errorsOf(t, 'htp://10.0.4.21:8089'), ['sensors[0].endpoint: expected an http:// or https:// URL, got "htp://10.0.4.21:8089"']);
});

t.test('an endpoint with a query or fragment is refused, as the cloud refuses it', async (t) => {
  const errors = errorsOf(t, 'http://10.0.4.21:8089/?zone=3', 'http://10.0.4.21:8089/stat#hold', 'http://admin:hunter2@10.0.4.21/?a=1');
  t.same(errors, [
    'sensors[0].endpoint: expected an http:// or https:// URL without a query or fragment (the binding path is appended to the endpoint\'s path, and a query or fragment would be dropped), got one with them',
    'sensors[1].endpoint: expected an http:// or https:// URL without a query or fragment (the binding path is appended to the endpoint\'s path, and a query or fragment would be dropped), got one with them',
    'sensors[2].endpoint: expected an http:// or https:// URL without a user or password, got one with them (not shown: a password is a secret)',
  ]);
  t.notOk(errors.join('\n').includes('hunter2'), 'no password on stderr or in the journal');
});

t.test('a plain endpoint, with or without a path, is accepted', async (t) => {
  const dir = t.testdir({});
  writeFileSync(join(dir, 'community'), 'public', { mode: 0o600 });
  const result = parseConfig(withSensors('http://10.0.4.21:8089', 'https://zgw.local:8443/api/devices/0x00158d/'), join(dir, 'c.yaml'), { dialects });
  t.ok(result.ok, result.ok ? 'accepted' : result.errors.join('\n'));
  if (result.ok) t.same(result.config.sensors.map((s) => s.endpoint), ['http://10.0.4.21:8089', 'https://zgw.local:8443/api/devices/0x00158d/']);
});
