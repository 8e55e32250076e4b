/**
 * Every AP a poll result names is reported under a name of its own. Two APs behind one controller (or
 * two radios of one AP) under one reported name would give two apClients readings with one roomId and
 * timestamp, of which telemetry keeps one; and two spellings of one MAC in the apZones of a dialect that
 * matches APs by MAC are one AP to the poller, which would count only the last. Both are refused at start.
 */
import t, { type Test } from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseConfig, shippedDialects, type ConfigResult } from '../../../edge/src/config/index.js';

const dialects = shippedDialects();

/** A config with one AP of `dialect` split by these apZones lines (and a plain AP beside it). */
const withApZones = (dialect: string, apZones: string) => `
buildingId: hq
pollIntervalS: 10
requestTimeoutS: 5
zones:
  lobby:
  cafe:
accessPoints:
  - { name: cafe-1, zone: cafe, dialect: mikrotik, transport: snmp, host: 10.0.0.4, snmp: { version: 2c, communityFile: community } }
  - name: split
    dialect: ${dialect}
    transport: snmp
    host: 10.0.0.5
    snmp: { version: 2c, communityFile: community }
    apZones:
${apZones}
`;

function parsed(t: Test, text: string): ConfigResult {
  const dir = t.testdir({});
  writeFileSync(join(dir, 'community'), 'public\n', { mode: 0o600 });
  return parseConfig(text, join(dir, 'c.yaml'), { dialects });
}

t.test('two radios of one AP (aruba-aos BSSIDs) under one reported name are refused, naming the name and both keys', async (t) => {
  const result = parsed(
    t,
    withApZones('aruba-aos', '      "24:de:c6:a0:01:10": { zone: lobby, name: lobby-east }\n      "24:de:c6:a0:01:20": { zone: lobby, name: lobby-east }'),
  );
  t.notOk(result.ok, 'the config is refused');
  if (result.ok) return;
  t.same(result.errors, [
    'accessPoints[1].apZones.24:de:c6:a0:01:20: "lobby-east" is already the name of accessPoints[1].apZones.24:de:c6:a0:01:10; give each AP a name of its own (each radio too, e.g. lobby-east-2g and lobby-east-5g), as two APs under one name give two apClients readings with one roomId and one is dropped',
  ]);
});

t.test('an AP behind a controller named as another AP behind it (cisco-wlc) is refused', async (t) => {
  const result = parsed(t, withApZones('cisco-wlc', '      AP-1: { zone: lobby, name: AP-2 }\n      AP-2: cafe'));
  t.notOk(result.ok, 'the config is refused');
  if (result.ok) return;
  t.same(result.errors, [
    'accessPoints[1].apZones.AP-2: "AP-2" is already the name of accessPoints[1].apZones.AP-1; give each AP a name of its own (each radio too, e.g. lobby-east-2g and lobby-east-5g), as two APs under one name give two apClients readings with one roomId and one is dropped',
  ]);
  const underControllerName = parsed(t, withApZones('cisco-wlc', '      AP-1: { zone: lobby, name: split }\n      AP-2: { zone: cafe, name: split }'));
  t.notOk(underControllerName.ok, "two APs under the controller's own name are refused too");
  if (!underControllerName.ok) t.match(underControllerName.errors, [/^accessPoints\[1\]\.apZones\.AP-2: "split" is already the name of accessPoints\[1\]\.apZones\.AP-1; /]);
});

t.test('an AP behind a controller named as an AP of another entry is still refused', async (t) => {
  const result = parsed(t, withApZones('cisco-wlc', '      AP-1: { zone: lobby, name: cafe-1 }'));
  t.notOk(result.ok);
  if (!result.ok) t.same(result.errors, ['accessPoints[1].apZones.AP-1: "cafe-1" is already used by accessPoints[0]; AP names must be unique']);
});

t.test('one MAC written twice in the apZones of a dialect that matches APs by MAC is refused', async (t) => {
  const result = parsed(
    t,
    withApZones('aruba-aos', '      "24-DE-C6-A0-01-10": { zone: lobby, name: lobby-east-2g }\n      "24:de:c6:a0:01:10": { zone: lobby, name: lobby-east-5g }'),
  );
  t.notOk(result.ok, 'the config is refused');
  if (result.ok) return;
  t.same(result.errors, [
    'accessPoints[1].apZones.24:de:c6:a0:01:10: the same MAC as accessPoints[1].apZones.24-DE-C6-A0-01-10, written differently; the aruba-aos dialect matches APs by MAC, so only one of them would be counted; keep one',
  ]);
});

t.test('distinct names, and a controller whose own name one of its APs reports under, still load', async (t) => {
  const radios = parsed(
    t,
    withApZones('aruba-aos', '      "24:de:c6:a0:01:10": { zone: lobby, name: lobby-east-2g }\n      "24-DE-C6-A0-01-20": { zone: lobby, name: lobby-east-5g }'),
  );
  t.ok(radios.ok, radios.ok ? 'loads' : radios.errors.join('\n'));
  if (radios.ok) t.same(radios.config.reportNames, { 'cafe-1': 'cafe-1', '24:de:c6:a0:01:10': 'lobby-east-2g', '24-DE-C6-A0-01-20': 'lobby-east-5g' });
  const controller = parsed(t, withApZones('cisco-wlc', '      AP-1: { zone: lobby, name: split }\n      AP-2: cafe'));
  t.ok(controller.ok, controller.ok ? 'loads' : controller.errors.join('\n'));
  if (controller.ok) t.same(controller.config.reportNames, { 'cafe-1': 'cafe-1', 'AP-1': 'split', 'AP-2': 'AP-2' });
});
