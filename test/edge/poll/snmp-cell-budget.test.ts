/**
 * One AP's SNMP walks share one budget of values, over every column and table, against the real snmpd:
 * columns are walked at once, so a bound per column let a controller fill three (or five) times it.
 * heap-limited-poll.test.ts shows the default budget under the unit's heap.
 */
import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadDialects } from '../../../edge/src/poll/dialects.js';
import { createPoller } from '../../../edge/src/poll/poller.js';
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
  const error = 'the agent answered more than 37 values in one poll (all tables and columns together)';
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
