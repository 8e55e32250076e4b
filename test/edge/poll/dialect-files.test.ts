import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DialectError, dialectsFromFiles, loadDialects, parseDialect } from '../../../edge/src/poll/dialects.js';

t.test('every shipped dialect loads', async (t) => {
  const dialects = loadDialects();
  t.same([...dialects.keys()].sort(), ['aruba-aos', 'cisco-wlc', 'mikrotik', 'openwrt-iw', 'openwrt-ubus', 'ruckus-zd', 'unifi']);
  const cisco = dialects.get('cisco-wlc');
  t.equal(cisco?.transport, 'snmp');
  if (cisco?.transport === 'snmp') {
    t.equal(cisco.controller, true);
    t.equal(cisco.tables[0]?.oid, '1.3.6.1.4.1.14179.2.1.11.1', 'bsnMobileStationRssiDataTable');
    t.match(
      cisco.apStatus,
      { name: 'bsnAPTable', oid: '1.3.6.1.4.1.14179.2.2.1.1', apIdentity: { column: 3, format: 'text' }, status: { column: 6, name: 'bsnAPOperationStatus', up: [1] } },
      'AP status from bsnAPTable: bsnAPName, associated(1)',
    );
  }
  const ruckus = dialects.get('ruckus-zd');
  t.match(
    ruckus?.transport === 'snmp' && ruckus.apStatus,
    { name: 'ruckusZDWLANAPTable', oid: '1.3.6.1.4.1.25053.1.2.2.1.1.2.1.1', apIdentity: { column: 1, format: 'mac' }, status: { column: 3, up: [1] } },
    'AP status from ruckusZDWLANAPTable: AP MAC, connected(1)',
  );
  const aruba = dialects.get('aruba-aos');
  t.same(aruba?.signal, { unit: 'SNR', noiseFloorDbm: -95 }, 'aruba RSSI is an SNR');
  const mikrotik = dialects.get('mikrotik');
  if (mikrotik?.transport === 'snmp') {
    t.same(
      mikrotik.tables.map((table) => table.oid),
      ['1.3.6.1.4.1.14988.1.1.1.2.1', '1.3.6.1.4.1.14988.1.1.1.21.4.1'],
      'RouterOS 6 and RouterOS 7 tables',
    );
  }
  const iw = dialects.get('openwrt-iw');
  t.equal(iw?.transport === 'ssh' && iw.command, 'iw dev {if} station dump');
});

const valid = {
  name: 'acme',
  vendor: 'Acme',
  transport: 'snmp',
  controller: false,
  description: 'test',
  tables: [
    {
      name: 'acmeStaTable',
      oid: '1.3.6.1.4.1.99999.1.1',
      index: [{ name: 'acmeStaMac', kind: 'mac' }],
      station: { index: 'acmeStaMac' },
      signal: { column: 3, name: 'acmeStaSignal' },
    },
  ],
  signal: { unit: 'dBm' },
};

t.test('a new vendor is one valid file', async (t) => {
  const catalog = dialectsFromFiles({ 'acme.json': JSON.stringify(valid) });
  t.equal(catalog.get('acme')?.transport, 'snmp');
});

t.test('every problem is reported at once, with its file and path', async (t) => {
  const broken = {
    ...valid,
    controller: 'yes',
    tables: [
      {
        ...valid.tables[0],
        oid: '1.3.6.x',
        singal: { column: 3, name: 'typo' },
        station: { index: 'noSuchPart' },
      },
    ],
  };
  const parsed = parseDialect(broken, 'acme.json');
  t.equal(parsed.ok, false);
  if (parsed.ok) return;
  t.match(parsed.errors.join('\n'), /acme\.json: controller: expected a boolean, got "yes"/);
  t.match(parsed.errors.join('\n'), /acme\.json: tables\[0\]\.singal: expected nothing \(unknown key; check the spelling\)/);
});

t.test('cross-field problems name the field', async (t) => {
  const parsed = parseDialect(
    {
      ...valid,
      controller: true,
      tables: [{ ...valid.tables[0], station: { index: 'nope' } }],
      signal: { unit: 'SNR', noiseFloorDbm: 20 },
    },
    'acme.json',
  );
  t.equal(parsed.ok, false);
  if (parsed.ok) return;
  t.same(parsed.errors, [
    'acme.json: signal.noiseFloorDbm: expected a noise floor between -120 and -60 dBm, got 20',
    'acme.json: tables[0].station.index: no index part named "nope" (have: acmeStaMac)',
    'acme.json: tables[0].apIdentity: a controller dialect must say which column identifies the AP',
  ]);
});

t.test('tables naming the AP differently (one by MAC, one by text) are refused: apZones keys could not match both', async (t) => {
  const byMac = { ...valid.tables[0], apIdentity: { column: 4, name: 'acmeStaApMac', format: 'mac' } };
  const byName = { ...valid.tables[0], name: 'acmeStaTable2', oid: '1.3.6.1.4.1.99999.1.2', apIdentity: { column: 4, name: 'acmeStaApName', format: 'text' } };
  const parsed = parseDialect({ ...valid, tables: [byMac, byName] }, 'acme.json');
  t.same(parsed.ok ? [] : parsed.errors, [
    'acme.json: tables[].apIdentity: expected every table to name the AP alike, all by MAC or all by text (apZones keys must match them all)',
  ]);
  t.equal(parseDialect({ ...valid, tables: [byMac, { ...byName, apIdentity: { ...byName.apIdentity, format: 'mac' } }] }, 'acme.json').ok, true);
});

t.test('an unknown parser, a file named differently, and bad JSON all fail the load together', async (t) => {
  const error = t.throws(() =>
    dialectsFromFiles({
      'acme.json': JSON.stringify({ ...valid, name: 'acme2' }),
      'broken.json': '{ not json',
      'ssh.json': JSON.stringify({ name: 'ssh', vendor: 'x', description: 'x', transport: 'ssh', command: 'x', parser: 'xml', signal: { unit: 'dBm' } }),
    }),
  ) as DialectError;
  t.ok(error instanceof DialectError);
  t.equal(error.problems.length, 3);
  t.match(error.problems[0], /^acme\.json: name: expected "acme" \(the file name\), got "acme2"/);
  t.match(error.problems[1], /^broken\.json: not valid JSON/);
  t.match(error.problems[2], /^ssh\.json: parser: expected one of "iw-station-dump" \| "ubus-clients-json" \| "mca-dump-json", got "xml"/);
});

t.test('loading a directory reads its json files; a missing directory is a clear error', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'lintel-dialects-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'acme.json'), JSON.stringify(valid));
  writeFileSync(join(dir, 'README.md'), 'not a dialect');
  t.same([...loadDialects(dir).keys()], ['acme']);
  t.throws(() => loadDialects(join(dir, 'missing')), { name: 'DialectError', message: /cannot read the dialect directory \(ENOENT\)/ });
});

const controller = {
  ...valid,
  controller: true,
  tables: [{ ...valid.tables[0], apIdentity: { column: 4, name: 'acmeStaApName', format: 'text' } }],
  apStatus: {
    name: 'acmeApTable',
    oid: '1.3.6.1.4.1.99999.2.1',
    apIdentity: { column: 2, name: 'acmeApName', format: 'text' },
    status: { column: 5, name: 'acmeApState', up: [1, 4], states: { '1': 'joined', '2': 'lost', '4': 'joinedMesh' } },
  },
};

t.test('a controller dialect with an AP status table loads', async (t) => {
  const parsed = parseDialect(controller, 'acme.json');
  t.equal(parsed.ok, true);
  t.match(parsed.ok && parsed.value, { apStatus: { status: { up: [1, 4] } } });
});

t.test('a bad AP status table is refused, naming the field', async (t) => {
  const problemsOf = (apStatus: unknown, extra: Record<string, unknown> = {}) => {
    const parsed = parseDialect({ ...controller, ...extra, apStatus }, 'acme.json');
    return parsed.ok ? [] : parsed.errors;
  };
  t.same(
    problemsOf({ ...controller.apStatus, oid: 'acmeApTable', statu: {} }),
    ['acme.json: apStatus.statu: expected nothing (unknown key; check the spelling), got an object'],
    'an unknown key is refused first, before the fields are read',
  );
  t.same(problemsOf({ ...controller.apStatus, oid: 'acmeApTable' }), [
    'acme.json: apStatus.oid: expected a dotted numeric OID such as 1.3.6.1.4.1.14179.2.1.11.1, got "acmeApTable"',
  ]);
  t.match(problemsOf({ ...controller.apStatus, status: { column: 5, name: 'acmeApState' } }).join('\n'), /^acme\.json: apStatus\.status\.up: expected /);
  t.match(problemsOf({ ...controller.apStatus, status: { ...controller.apStatus.status, up: ['up'] } }).join('\n'), /^acme\.json: apStatus\.status\.up\[0\]: expected an integer status value, got "up"$/);
  t.match(
    problemsOf({ ...controller.apStatus, apIdentity: { index: 'acmeApMac' } }).join('\n'),
    /acme\.json: apStatus\.apIdentity\.index: expected nothing \(unknown key; check the spelling\)/,
    'the AP is named by a column, not by an index part',
  );
  t.same(problemsOf({ ...controller.apStatus, status: { ...controller.apStatus.status, column: 2, up: [], states: { up: 'joined' } } }), [
    "acme.json: apStatus.status.column: 2 is already the apIdentity column; expected the AP's status column",
    'acme.json: apStatus.status.up: expected at least one value that means the AP is up',
    'acme.json: apStatus.status.states: expected integer keys (status values), got "up"',
  ]);
  t.same(problemsOf({ ...controller.apStatus, status: { ...controller.apStatus.status, up: [1, 1] } }), ['acme.json: apStatus.status.up: values must be unique']);
  t.same(problemsOf({ ...controller.apStatus, apIdentity: { column: 2, name: 'acmeApMac', format: 'mac' } }), [
    'acme.json: apStatus.apIdentity.format: expected "text" as tables[0].apIdentity names the AP (apZones keys must match both), got "mac"',
  ]);
  t.same(problemsOf(controller.apStatus, { controller: false }), ['acme.json: apStatus: only a controller dialect (controller: true) can have an AP status table']);
});

t.test('a bad AP status table fails the load with its file', async (t) => {
  t.throws(() => dialectsFromFiles({ 'acme.json': JSON.stringify({ ...controller, apStatus: { ...controller.apStatus, status: { ...controller.apStatus.status, up: [] } } }) }), {
    name: 'DialectError',
    message: /invalid AP dialect definitions:\n {2}acme\.json: apStatus\.status\.up: expected at least one value that means the AP is up/,
  });
});
