/**
 * What a simulated controller serves, read back by the poller's own decoders: the AP status table in
 * each controller dialect, and a station table that lists each station once.
 */
import t from 'tap';
import { loadDialects, type SnmpDialect } from '../../../edge/src/poll/dialects.js';
import { decodeApStatusTable, decodeStationTable, type WalkedColumns } from '../../../edge/src/poll/snmp/table.js';
import { apStatusRows, rebootingApStatus, snmpRows, type SnmpRow } from '../../../edge/src/simulate/render.js';

const dialects = loadDialects();
const controller = (name: string) => dialects.get(name) as SnmpDialect;

/** The rows as a walk of them returns: cells by column, then by row index. */
function walked(rows: readonly SnmpRow[]): WalkedColumns {
  const columns = new Map<number, Map<string, number | Buffer>>();
  for (const row of rows) {
    for (const [column, value] of row.cells) {
      const cells = columns.get(column) ?? new Map<string, number | Buffer>();
      cells.set(row.index, value);
      columns.set(column, cells);
    }
  }
  return columns;
}

const aps = [
  { name: 'ap-lobby-1', mac: '02:3a:9a:11:22:01', rebooting: false },
  { name: 'ap-lobby-2', mac: '02:3a:9a:11:22:02', rebooting: true },
];

t.test('cisco-wlc: APs by name, indexed by AP MAC; a rebooting AP is downloading(3)', async (t) => {
  const dialect = controller('cisco-wlc');
  const spec = dialect.apStatus;
  if (!spec) throw new Error('cisco-wlc has an AP status table');
  const rows = apStatusRows(spec, aps, rebootingApStatus(dialect.name, spec));
  t.same(rows.map((row) => row.index), ['2.58.154.17.34.1', '2.58.154.17.34.2'], 'one row per AP, indexed by its MAC');
  t.same(decodeApStatusTable(spec, walked(rows)), {
    aps: new Map([
      ['ap-lobby-1', { up: true, value: 1 }],
      ['ap-lobby-2', { up: false, value: 3 }],
    ]),
    rows: 2,
  });
});

t.test('ruckus-zd: APs by MAC; a rebooting AP is disconnected(0)', async (t) => {
  const dialect = controller('ruckus-zd');
  const spec = dialect.apStatus;
  if (!spec) throw new Error('ruckus-zd has an AP status table');
  const rows = apStatusRows(spec, aps, rebootingApStatus(dialect.name, spec));
  t.same(decodeApStatusTable(spec, walked(rows)), {
    aps: new Map([
      ['02:3a:9a:11:22:01', { up: true, value: 1 }],
      ['02:3a:9a:11:22:02', { up: false, value: 0 }],
    ]),
    rows: 2,
  });
});

t.test('a dialect without a chosen value gets its first named state that is not up', async (t) => {
  const spec = controller('ruckus-zd').apStatus;
  if (!spec) throw new Error('ruckus-zd has an AP status table');
  t.equal(rebootingApStatus('other-controller', { ...spec, status: { ...spec.status, states: { '1': 'up', '7': 'rebooting' } } }), 7);
  t.equal(rebootingApStatus('other-controller', { ...spec, status: { column: 3, name: 'status', up: [1, 2] } }), 3, 'no names: past the up values');
});

t.test('a table indexed by the station alone lists it once, under the AP that hears it loudest', async (t) => {
  const dialect = controller('ruckus-zd');
  const table = dialect.tables[0];
  if (!table) throw new Error('ruckus-zd has a station table');
  const station = '02:00:00:00:00:aa';
  const rows = snmpRows(table, dialect.signal, [
    { mac: station, rssiDbm: -70, apName: 'ap-1', apMac: '02:3a:9a:11:22:01' },
    { mac: station, rssiDbm: -50, apName: 'ap-2', apMac: '02:3a:9a:11:22:02' },
    { mac: station, rssiDbm: -60, apName: 'ap-3', apMac: '02:3a:9a:11:22:03' },
  ]);
  t.same(decodeStationTable(table, walked(rows)).sightings, [{ mac: station, signal: 45, apIdentity: '02:3a:9a:11:22:02' }]);
});
