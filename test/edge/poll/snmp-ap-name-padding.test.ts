/**
 * A controller's AP names (the identity column of its station table, and its AP status table) lose the
 * NULs an agent pads them with, by a scan from the end; a name longer than any controller gives is read
 * as no name. The padding was stripped with `/\0+$/`, which retried from every NUL: an OCTET STRING of
 * 65,000 NULs that ends in another byte took seconds on the event loop, and hundreds fit one poll.
 */
import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadDialects, type ApStatusTableSpec, type SnmpTableSpec } from '../../../edge/src/poll/dialects.js';
import { createPoller } from '../../../edge/src/poll/poller.js';
import type { SnmpValue } from '../../../edge/src/poll/snmp/session.js';
import { decodeApStatusTable, decodeStationTable, MAX_AP_NAME_BYTES, type WalkedColumns } from '../../../edge/src/poll/snmp/table.js';
import { recording, startSnmpd } from '../../support/peers/snmpd.js';
import { edgeRecording } from '../support/recordings.js';

const dialects = loadDialects();
const wlc = dialects.get('cisco-wlc');
if (wlc?.transport !== 'snmp' || !wlc.apStatus) throw new Error('cisco-wlc is an SNMP controller dialect with an AP status table');
const stationTable: SnmpTableSpec = wlc.tables[0]!;
const apTable: ApStatusTableSpec = wlc.apStatus;

/** 65,400 NULs, then one other byte: the worst case of the old pattern within one datagram. */
const NULS_THEN_X = Buffer.concat([Buffer.alloc(65_400), Buffer.from('x')]);
/** A row index of bsnMobileStationRssiDataTable: station MAC, AP MAC, slot, antenna. */
const ROW = '2.0.0.0.0.1.0.58.154.17.34.1.0.0';

/** Walked cells, column by column: `[column, [[index, value], …]]`. */
const walked = (...columns: Array<[number, Array<[string, SnmpValue]>]>): WalkedColumns => new Map(columns.map(([column, cells]) => [column, new Map(cells)]));

t.test('an AP name of NULs ending in another byte is no name: not in the AP status table, no AP for the station', async (t) => {
  const status = decodeApStatusTable(apTable, walked([3, [['0.58.154.17.34.1', NULS_THEN_X]]], [6, [['0.58.154.17.34.1', 1]]]));
  // sizes, not the names: a failure would print 65,000 NULs
  t.same([...status.aps.keys()].map((name) => name.length), [], 'no AP listed under it');
  t.equal(status.rows, 1, 'the row is still seen');

  const stations = decodeStationTable(stationTable, walked([4, [[ROW, NULS_THEN_X]]], [5, [[ROW, -50]]], [25, [[ROW, 1]]]));
  t.same(stations.sightings.map(({ mac, signal }) => ({ mac, signal })), [{ mac: '02:00:00:00:00:01', signal: -50 }], 'the station is read');
  t.equal(stations.sightings[0]?.apIdentity?.length, undefined, 'with no AP');
});

t.test('trailing NULs are dropped however many; the bound counts what is left', async (t) => {
  const padded = (name: string, nuls: number) => Buffer.concat([Buffer.from(name), Buffer.alloc(nuls)]);
  const atBound = 'n'.repeat(MAX_AP_NAME_BYTES);
  const names: Array<[string, SnmpValue]> = [
    ['0.0.0.0.0.1', padded('AP-Lobby-1', 65_000)],
    ['0.0.0.0.0.2', padded(atBound, 3)],
    ['0.0.0.0.0.3', padded(`${atBound}n`, 0)],
    ['0.0.0.0.0.4', `${atBound}n`],
  ];
  const status = decodeApStatusTable(apTable, walked([3, names], [6, names.map(([index]) => [index, 1])]));
  t.same([...status.aps.keys()], ['AP-Lobby-1', atBound], `a name of ${MAX_AP_NAME_BYTES} bytes is read, one byte more is not`);
});

t.test('cisco-wlc against the real snmpd: a padded AP name matches its apZones key, an over-long one no key', async (t) => {
  const dir = t.testdir({});
  const hex = (bytes: Buffer) => [...bytes].map((byte) => byte.toString(16).padStart(2, '0')).join(' ');
  const overLong = `${'\0'.repeat(MAX_AP_NAME_BYTES + 44)}x`;
  // the recorded controller, AP-Lobby-1 padded with NULs and AP-Cafe-1 renamed to an over-long name, in its station and AP tables
  const files = [recording('cisco-wlc.snmpwalk'), edgeRecording('cisco-wlc-aps.snmpwalk')].map((source, i) => {
    const file = join(dir, `controller-${i}.snmpwalk`);
    const text = readFileSync(source, 'utf8')
      .replaceAll('STRING: "AP-Lobby-1"', `Hex-STRING: ${hex(Buffer.concat([Buffer.from('AP-Lobby-1'), Buffer.alloc(600)]))}`)
      .replaceAll('STRING: "AP-Cafe-1"', `Hex-STRING: ${hex(Buffer.from(overLong))}`);
    writeFileSync(file, text);
    return file;
  });
  const snmpd = await startSnmpd({ community: 'lintel-ro', recordings: files });
  t.teardown(() => snmpd.stop());
  const poller = createPoller({ dialects });
  t.teardown(() => poller.close());
  const results = await poller.pollAll(
    [
      {
        name: 'wlc-1',
        zone: 'unused',
        dialect: 'cisco-wlc',
        target: { transport: 'snmp', host: snmpd.host, port: snmpd.port, version: '2c', community: 'lintel-ro' },
        apZones: { 'AP-Lobby-1': 'lobby', [overLong]: 'cafe' },
      },
    ],
    3000,
  );
  t.same(
    results.map((r) => (r.ok ? { zone: r.zone, stations: r.stations } : { zone: r.zone, reason: r.reason, error: r.error })),
    [
      { zone: 'lobby', stations: [{ mac: 'f0:18:98:a1:b2:01', rssiDbm: -48 }] },
      { zone: 'cafe', reason: 'ap_down', error: 'not joined to the controller (not listed in bsnAPTable)' },
    ],
  );
});
