/**
 * People are a zone's devices divided by devicesPerPerson, rounded up "so one device is one person",
 * which holds only for a factor of 1 or more. Below it a lone device read as several people (0.2: 5), a
 * count the cloud's privacy floor keeps unsuppressed forever while the same hour's device count is
 * suppressed, and the device count could be read back from it (0.5: people = 2 × devices). The config
 * refuses such a factor at start, naming its path and why.
 */
import t from 'tap';
import { join } from 'node:path';
import { parseConfig, shippedDialects } from '../../../edge/src/config/index.js';
import { peopleFromDevices } from '../../../edge/src/report/readings.js';

const dialects = shippedDialects();

/** A config with one zone of the given devicesPerPerson, written as YAML writes it; no secret files. */
const withFactor = (factor: string) => `
buildingId: hq
pollIntervalS: 10
requestTimeoutS: 5
zones:
  lobby:
    devicesPerPerson: ${factor}
accessPoints:
  - { name: lobby-1, zone: lobby, dialect: aruba-aos, transport: snmp, host: 10.0.0.5, snmp: { version: 2c, communityFile: /nonexistent/community } }
`;

const errorsOf = (factor: string) => {
  const result = parseConfig(withFactor(factor), join(t.testdirName, 'c.yaml'), { dialects });
  return result.ok ? [] : result.errors.filter((e) => e.startsWith('zones.'));
};

const EXPECTED = 'a number of devices per person, 1 or more (e.g. 1.5)';

t.test('a factor below 1 is refused with its path and the reason', async (t) => {
  for (const factor of ['0.2', '0.5', '0.999']) {
    t.same(
      errorsOf(factor),
      [
        `zones.lobby.devicesPerPerson: expected ${EXPECTED}, got ${factor}; below 1, one device would be reported as more than one person, past the cloud's privacy floor, and the device count could be read back from the estimate`,
      ],
      factor,
    );
  }
});

t.test('no factor at all is refused as before', async (t) => {
  for (const [factor, got] of [['0', '0'], ['-1.5', '-1.5'], ['.inf', 'Infinity'], ['many', '"many"']] as const) {
    t.same(errorsOf(factor), [`zones.lobby.devicesPerPerson: expected ${EXPECTED}, got ${got}`], factor);
  }
});

t.test('a factor of 1 or more is taken, and one device is then at most one person', async (t) => {
  for (const factor of ['1', '1.4', '2']) {
    t.same(errorsOf(factor), [], factor);
    t.equal(peopleFromDevices(1, Number(factor)), 1, `one device at ${factor}`);
  }
});
