/**
 * Decoding walked SNMP columns into sightings, with plain data (no agent): index splitting, MAC from
 * index or column, AP identity, stale rows; and a controller's AP status table.
 */
import t from 'tap';
import { loadDialects, type ApStatusTableSpec, type SnmpTableSpec } from '../../../edge/src/poll/dialects.js';
import { columnsToWalk, decodeApStatusTable, decodeStationTable } from '../../../edge/src/poll/snmp/table.js';

const dialects = loadDialects();
function tableOf(name: string, i = 0): SnmpTableSpec {
  const dialect = dialects.get(name);
  if (dialect?.transport !== 'snmp' || !dialect.tables[i]) throw new Error(`no SNMP table ${name}[${i}]`);
  return dialect.tables[i];
}
function statusTableOf(name: string): ApStatusTableSpec {
  const dialect = dialects.get(name);
  if (dialect?.transport !== 'snmp' || !dialect.apStatus) throw new Error(`no AP status table in ${name}`);
  return dialect.apStatus;
}

t.test('only the needed columns are walked', async (t) => {
  t.same(columnsToWalk(tableOf('aruba-aos'), false), [14]);
  t.same(columnsToWalk(tableOf('aruba-aos'), true), [2, 14]);
  t.same(columnsToWalk(tableOf('cisco-wlc'), true), [4, 5, 25]);
  t.same(columnsToWalk(tableOf('mikrotik', 1), false), [6]);
});

t.test('cisco rows: client MAC from the index, AP name from a column, stale rows dropped, bad rows counted', async (t) => {
  const client = '240.24.152.161.178.1';
  const apMac = '0.58.154.17.34.1';
  const walked = new Map<number, Map<string, number | Buffer>>([
    [
      4,
      new Map([
        [`${client}.${apMac}.1.0`, Buffer.from('AP-Lobby-1')],
        [`${client}.${apMac}.0.0`, Buffer.from('AP-Lobby-1\0')],
      ]),
    ],
    [
      5,
      new Map<string, number | Buffer>([
        [`${client}.${apMac}.1.0`, -48],
        [`${client}.${apMac}.0.0`, -39],
        [`${client}.${apMac}.1`, -50],
        [`${client}.${apMac}.0.1`, Buffer.from('x')],
      ]),
    ],
    [25, new Map([[`${client}.${apMac}.0.0`, 412]])],
  ]);
  t.same(decodeStationTable(tableOf('cisco-wlc'), walked), {
    sightings: [
      { mac: 'f0:18:98:a1:b2:01', signal: -48, apIdentity: 'AP-Lobby-1' },
      { mac: 'f0:18:98:a1:b2:01', signal: Number.NaN },
    ],
    rows: 4,
    skipped: 1,
    stale: 1,
  });
});

t.test('a row without a numeric signal cell is a station of unknown signal, not a bad row', async (t) => {
  const apMac = '0.58.154.17.34.1';
  const rowOf = (lastOctet: number) => `2.0.0.0.0.${lastOctet}.${apMac}.1.0`;
  const walked = new Map<number, Map<string, number | Buffer | null>>([
    [
      4,
      new Map([
        [rowOf(1), Buffer.from('AP-Lobby-1')],
        [rowOf(2), Buffer.from('AP-Lobby-1')],
        [rowOf(3), Buffer.from('AP-Lobby-1')],
        [rowOf(4), Buffer.from('AP-Lobby-1')],
      ]),
    ],
    // row 2 has no signal cell at all; row 3 a string; row 4 null
    [5, new Map<string, number | Buffer | null>([[rowOf(1), -52], [rowOf(3), Buffer.from('n/a')], [rowOf(4), null]])],
    [25, new Map([[rowOf(1), 2], [rowOf(2), 3], [rowOf(3), 4], [rowOf(4), 5]])],
  ]);
  t.same(decodeStationTable(tableOf('cisco-wlc'), walked), {
    sightings: [
      { mac: '02:00:00:00:00:01', signal: -52, apIdentity: 'AP-Lobby-1' },
      { mac: '02:00:00:00:00:03', signal: Number.NaN, apIdentity: 'AP-Lobby-1' },
      { mac: '02:00:00:00:00:04', signal: Number.NaN, apIdentity: 'AP-Lobby-1' },
      { mac: '02:00:00:00:00:02', signal: Number.NaN, apIdentity: 'AP-Lobby-1' },
    ],
    rows: 4,
    skipped: 0,
    stale: 0,
  });

  const aruba = new Map([[14, new Map<string, number | Buffer>([['2.0.0.0.0.1', 41], ['2.0.0.0.0.2', Buffer.from('n/a')]])]]);
  t.same(decodeStationTable(tableOf('aruba-aos'), aruba), {
    sightings: [
      { mac: '02:00:00:00:00:01', signal: 41 },
      { mac: '02:00:00:00:00:02', signal: Number.NaN },
    ],
    rows: 2,
    skipped: 0,
    stale: 0,
  });
});

t.test('ruckus rows: AP identity is a MacAddress column, normalised', async (t) => {
  const walked = new Map<number, Map<string, number | Buffer>>([
    [2, new Map([['16.241.242.0.0.1', Buffer.from([0xc4, 0x01, 0x7c, 0x3d, 0x50, 0x10])]])],
    [9, new Map([['16.241.242.0.0.1', 54]])],
  ]);
  t.same(decodeStationTable(tableOf('ruckus-zd'), walked).sightings, [{ mac: '10:f1:f2:00:00:01', signal: 54, apIdentity: 'c4:01:7c:3d:50:10' }]);
});

t.test('an index with a sub-id out of range for a MAC is skipped', async (t) => {
  const walked = new Map([[14, new Map([['4.211.176.18.52.999', 40]])]]);
  t.same(decodeStationTable(tableOf('aruba-aos'), walked), { sightings: [], rows: 1, skipped: 1, stale: 0 });
});

t.test('cisco AP status: by AP name; a name on two rows is up when either row is; an unreadable status is not up', async (t) => {
  const walked = new Map<number, Map<string, number | Buffer | null>>([
    [
      3,
      new Map<string, Buffer | null>([
        ['0.58.154.17.34.1', Buffer.from('AP-Lobby-1\0')],
        ['0.58.154.17.34.2', Buffer.from('AP-Lobby-2')],
        ['0.58.154.17.34.12', Buffer.from('AP-Lobby-2')],
        ['0.58.154.17.34.3', Buffer.from('AP-Cafe-1')],
        ['0.58.154.17.34.4', null],
      ]),
    ],
    [6, new Map<string, number | Buffer>([['0.58.154.17.34.1', 2], ['0.58.154.17.34.2', 1], ['0.58.154.17.34.12', 3], ['0.58.154.17.34.3', Buffer.from('1')], ['0.58.154.17.34.4', 1]])],
  ]);
  const decoded = decodeApStatusTable(statusTableOf('cisco-wlc'), walked);
  t.equal(decoded.rows, 5, 'every row counts, even one without a name');
  t.same(Object.fromEntries(decoded.aps), {
    'AP-Lobby-1': { up: false, value: 2 },
    'AP-Lobby-2': { up: true, value: 1 },
    'AP-Cafe-1': { up: false, value: undefined },
  });
});

t.test('ruckus AP status: by AP MAC, normalised; an empty table has no rows', async (t) => {
  const spec = statusTableOf('ruckus-zd');
  const walked = new Map<number, Map<string, number | Buffer>>([
    [1, new Map([['196.1.124.61.80.16', Buffer.from([0xc4, 0x01, 0x7c, 0x3d, 0x50, 0x10])]])],
    [3, new Map([['196.1.124.61.80.16', 1]])],
  ]);
  t.same(Object.fromEntries(decodeApStatusTable(spec, walked).aps), { 'c4:01:7c:3d:50:10': { up: true, value: 1 } });
  t.same(decodeApStatusTable(spec, new Map()), { aps: new Map(), rows: 0 });
});
