/**
 * The SNMP walks of one poll share one budget of values, over every AP, column and table, against the
 * real snmpd: columns and APs are walked at once, so a bound per column let a controller fill three (or
 * five) times it, and a bound per AP let several large APs together fill the heap.
 * heap-limited-poll.test.ts shows the default budget under the unit's heap.
 */
import t from 'tap';
import { startControllers, wlcAccessPoint, wlcRecording } from './support/wlc-recording.js';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dialectsFromFiles, loadDialects } from '../../../edge/src/poll/dialects.js';
import { createPoller } from '../../../edge/src/poll/poller.js';
import { CellBudget } from '../../../edge/src/poll/snmp/session.js';
import type { AccessPoint } from '../../../edge/src/poll/types.js';
import { recording, startSnmpd } from '../../support/peers/snmpd.js';
import { edgeRecording } from '../support/recordings.js';

const dialects = loadDialects();
const TIMEOUT_MS = 3000;
const wlcAps = { 'AP-Lobby-1': 'lobby', 'AP-Lobby-2': 'lobby', 'AP-Cafe-1': 'cafe' };

t.test('the recorded controller: 30 station values and 8 status values fit a budget of 38, not of 37', async (t) => {
  const snmpd = await startSnmpd({ community: 'lintel-ro', recordings: [recording('cisco-wlc.snmpwalk'), edgeRecording('cisco-wlc-aps.snmpwalk')] });
  t.teardown(() => snmpd.stop());
  const wlc: AccessPoint = { name: 'wlc-1', zone: 'unused', dialect: 'cisco-wlc', target: { transport: 'snmp', host: snmpd.host, port: snmpd.port, version: '2c', community: 'lintel-ro' }, apZones: wlcAps };

  const enough = createPoller({ dialects, maxSnmpCells: 38 });
  t.teardown(() => enough.close());
  t.match(await enough.pollAll([wlc], TIMEOUT_MS), [{ ok: true }, { ok: true }, { ok: true }]);

  // each column (10 values) is well within it: only the poll as a whole is not
  const short = createPoller({ dialects, maxSnmpCells: 37 });
  t.teardown(() => short.close());
  const error = 'the SNMP answers of this poll passed 37 values (all access points, tables and columns together), and this one held the most';
  t.same(
    (await short.pollAll([wlc], TIMEOUT_MS)).map((r) => (r.ok ? r : { ap: r.ap, reason: r.reason, error: r.error })),
    Object.keys(wlcAps).map((ap) => ({ ap, reason: 'bad_output', error })),
    'every AP behind the controller fails alike',
  );
});

t.test('a long string counts as one value per 256 bytes', async (t) => {
  const dir = t.testdir({});
  const file = join(dir, 'cisco-wlc-long-names.snmpwalk');
  // the station table only (no status table): 10 rows, each AP name now 300 characters
  writeFileSync(file, readFileSync(recording('cisco-wlc.snmpwalk'), 'utf8').replace(/STRING: "AP-[A-Za-z]+-\d"/g, `STRING: "AP-${'x'.repeat(297)}"`));
  const snmpd = await startSnmpd({ community: 'lintel-ro', recordings: [file] });
  t.teardown(() => snmpd.stop());
  const wlc: AccessPoint = {
    name: 'wlc-1',
    zone: 'unused',
    dialect: 'cisco-wlc',
    target: { transport: 'snmp', host: snmpd.host, port: snmpd.port, version: '2c', community: 'lintel-ro' },
    apZones: { [`AP-${'x'.repeat(297)}`]: 'lobby' },
  };
  const enough = createPoller({ dialects, maxSnmpCells: 40 });
  t.teardown(() => enough.close());
  t.match(await enough.pollAll([wlc], TIMEOUT_MS), [{ ok: true }], '10 names of 2 each, 10 signals, 10 ages');
  const short = createPoller({ dialects, maxSnmpCells: 39 });
  t.teardown(() => short.close());
  t.match(await short.pollAll([wlc], TIMEOUT_MS), [{ ok: false, reason: 'bad_output' }]);
});

t.test('a long OID counts as one value more per 256 bytes, as a long string does', async (t) => {
  // a table of 10 stations under an entry OID of some 260 characters (snmpd takes 128 sub-ids): each of
  // its OIDs is held until the poll is decoded, as a string value is
  const entry = `1.3.6.1.4.1.99999${'.4000000000'.repeat(24)}`;
  const dialect = {
    name: 'long-oid',
    vendor: 'test',
    description: 'a station table under a long entry OID',
    transport: 'snmp',
    controller: false,
    tables: [{ name: 'longOidTable', oid: entry, index: [{ name: 'station', kind: 'mac' }], station: { index: 'station' }, signal: { column: 1, name: 'signal' } }],
    signal: { unit: 'dBm' },
  };
  const dir = t.testdir({});
  const file = join(dir, 'long-oid.snmpwalk');
  writeFileSync(file, Array.from({ length: 10 }, (_, i) => `.${entry}.1.2.0.0.0.0.${i} = INTEGER: -50\n`).join(''));
  t.ok(`${entry}.1.2.0.0.0.0.0`.length > 256, 'each OID is over 256 characters');
  const snmpd = await startSnmpd({ community: 'lintel-ro', recordings: [file] });
  t.teardown(() => snmpd.stop());
  const longOid = dialectsFromFiles({ 'long-oid.json': JSON.stringify(dialect) });
  const ap: AccessPoint = { name: 'long', zone: 'lab', dialect: 'long-oid', target: { transport: 'snmp', host: snmpd.host, port: snmpd.port, version: '2c', community: 'lintel-ro' } };

  const enough = createPoller({ dialects: longOid, maxSnmpCells: 20 });
  t.teardown(() => enough.close());
  t.match(await enough.pollAll([ap], TIMEOUT_MS), [{ ok: true, stations: { length: 10 } }], '10 values of 2 each');
  const short = createPoller({ dialects: longOid, maxSnmpCells: 19 });
  t.teardown(() => short.close());
  t.match(await short.pollAll([ap], TIMEOUT_MS), [{ ok: false, reason: 'bad_output', error: /^the SNMP answers of this poll passed 19 values/ }]);
});

t.test('two controllers polled together draw on one budget: each fits it alone; together, the one holding the most gives way and the other reads', async (t) => {
  const dir = t.testdir({});
  // 200 rows of three columns (602 values with the status table); the values a controller returned stay
  // counted until the poll is done, walked or decoded, so whichever is still walking when the two pass
  // the budget gives way
  writeFileSync(join(dir, 'wlc-200.snmpwalk'), wlcRecording(200));
  const [first, second] = await startControllers(join(dir, 'wlc-200.snmpwalk'), join(dir, 'wlc-200.snmpwalk'));
  t.teardown(() => Promise.all([first.stop(), second.stop()]));
  const wlc = (name: string, port: number) => wlcAccessPoint(name, port);
  const poller = createPoller({ dialects, maxSnmpCells: 1000, maxRepetitions: 5 });
  t.teardown(() => poller.close());
  t.match(await poller.pollAll([wlc('one', first.port)], 30_000), [{ ok: true, stations: { length: 200 } }], 'one controller (602 values) fits 1,000');
  const both = await poller.pollAll([wlc('one', first.port), wlc('two', second.port)], 30_000);
  t.same(
    both.map((r) => (r.ok ? 'ok' : r.reason)).sort(),
    ['bad_output', 'ok'],
    'two (1,204 values) do not: the controller holding the most when the budget is passed gives way, the other reads',
  );
  t.match(await poller.pollAll([wlc('two', second.port)], 30_000), [{ ok: true }], 'each poll has a budget of its own');
});

t.test('the budget keeps the values of a poll that succeeded and counts out those of one that failed', async (t) => {
  const gaveWay: string[] = [];
  const run = (keptFirst: boolean) => {
    const budget = new CellBudget(100);
    const first = {};
    const second = {};
    budget.join(first, () => gaveWay.push('first'));
    budget.join(second, () => gaveWay.push('second'));
    budget.take(first, 80);
    budget.closed(first, keptFirst);
    budget.take(second, 30);
  };
  run(false);
  t.same(gaveWay, [], 'a failed poll dropped its 80 values: 30 more fit');
  run(true);
  t.same(gaveWay, ['second'], 'a poll that succeeded holds its 80 to the end of the poll: the one still walking gives way');
});
