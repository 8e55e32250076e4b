/**
 * The config refuses a devicesPerPerson below 1 (a lone device would read as several people, past the
 * cloud's privacy floor: test/edge/config/devices-per-person-floor.test.ts), but `simulate
 * --devices-per-person` took any value above 0, and simulate can post to a real ingest. It is now bad
 * usage (exit 2) before anything starts, refused in the config's own words.
 */
import t from 'tap';
import { join } from 'node:path';
import { parseConfig, shippedDialects } from '../../../edge/src/config/index.js';
import { runCli } from './building-config.js';

/** The config's refusal of `factor` for a zone, without its path (`zones.lobby.devicesPerPerson: `). */
function configRefusal(factor: string): string {
  const text = `
buildingId: hq
pollIntervalS: 10
requestTimeoutS: 5
zones: { lobby: { devicesPerPerson: ${factor} } }
accessPoints:
  - { name: lobby-1, zone: lobby, dialect: aruba-aos, transport: snmp, host: 10.0.0.5, snmp: { version: 2c, communityFile: /nonexistent/community } }
`;
  const result = parseConfig(text, join(t.testdirName, 'c.yaml'), { dialects: shippedDialects() });
  const prefix = 'zones.lobby.devicesPerPerson: ';
  const error = result.ok ? undefined : result.errors.find((e) => e.startsWith(prefix));
  return error?.slice(prefix.length) ?? '(the config took it)';
}

t.test('--devices-per-person below 1 is bad usage, in the words the config refuses it with', async (t) => {
  for (const factor of ['0.5', '0.999']) {
    const reason = configRefusal(factor);
    t.match(reason, /below 1, one device would be reported as more than one person, past the cloud's privacy floor/, `the config refuses ${factor}`);
    const { code, stdout, stderr } = await runCli(['simulate', '--devices-per-person', factor, '--ticks', '1', '--output', 'lines']);
    t.equal(code, 2, `${factor}: exit 2 (stderr: ${stderr.slice(0, 400)})`);
    t.equal(stderr, `lintel-edge: --devices-per-person: ${reason}\nRun lintel-edge help for usage.\n`, `${factor}: the config's words`);
    t.equal(stdout, '', `${factor}: nothing started`);
  }
});

t.test('no factor at all is still refused, and 1 or more is taken', async (t) => {
  for (const factor of ['0', '-1', 'many', '']) {
    const { code, stderr } = await runCli(['simulate', `--devices-per-person=${factor}`, '--ticks', '1', '--output', 'lines']);
    t.equal(code, 2, `${JSON.stringify(factor)}: exit 2`);
    t.match(stderr, `--devices-per-person: expected a number of devices per person, 1 or more (e.g. 1.5), got ${JSON.stringify(factor)}`, JSON.stringify(factor));
  }
  const taken = await runCli(['simulate', '--devices-per-person', '1', '--ticks', '1', '--interval-ms', '100', '--aps', '2', '--zones', '1', '--devices', '2', '--output', 'lines']);
  t.equal(taken.code, 0, `1 is taken (stderr: ${taken.stderr.slice(0, 400)})`);
  t.match(taken.stdout, /^tick 1 /m, 'and the run ticks');
});
