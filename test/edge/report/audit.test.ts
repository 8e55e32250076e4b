import t from 'tap';
import { auditBody } from '../../../edge/src/report/audit.js';
import { identifierKind, redactIdentifiers } from '../../../edge/src/report/identifiers.js';
import { scrubMacs } from '../../../edge/src/poll/mac.js';

const ts = 1795374254000;
const batch = (readings: unknown[], extra: Record<string, unknown> = {}) => JSON.stringify({ batchId: 'hq@2026-11-22T19:04:14.000Z', readings, ...extra });
const count = (roomId: string, n = 3) => ({ type: 'totalDeviceCount', buildingId: 'hq', roomId, timestamp: ts, totalDeviceCount: n });

t.test('aggregates pass', async (t) => {
  t.same(auditBody(batch([count('lobby'), { type: 'zoneTransition', buildingId: 'hq', roomId: 'cafe', fromRoomId: 'lobby', timestamp: ts, zoneTransition: 2 }])), []);
  t.same(auditBody(batch([])), []);
});

t.test('a log line loses every MAC the audit would find, in any spelling', async (t) => {
  const spellings = [
    '3c:22:fb:01:02:03', '3C-22-FB-01-02-03', '3c22fb010203', '3c22.fb01.0203', '3c 22 fb 01 02 03', '3c_22_fb_01_02_03',
    'aabb-ccdd-eeff', 'AABBCC-DDEEFF', 'aabb:ccdd:eeff', '4:d3:b0:12:34:56', '60.34.251.1.2.3',
  ];
  for (const mac of spellings) {
    t.equal(identifierKind(mac), 'mac', `the audit finds ${mac}`);
    const line = redactIdentifiers(`AP ${mac} not joined to the controller`);
    t.equal(line, 'AP [mac] not joined to the controller', mac);
    t.equal(scrubMacs(`station ${mac} gone`), 'station <mac> gone', mac);
  }
  t.equal(redactIdentifiers('no answer for 1.3.6.1.4.1.14823.2.2.1.5.2.2.1.1.60.34.251.1.2.3'), 'no answer for [oid]', 'a station table OID');
  t.equal(redactIdentifiers('AP lobby-1 not up: status is 3 (downloading) after 2.5 s'), 'AP lobby-1 not up: status is 3 (downloading) after 2.5 s', 'ordinary text is left alone');
});

t.test('a MAC run into the letters of a name is found too, and a finding never prints the key it found', async (t) => {
  for (const name of ['device3c22fb010203', 'office3c22fb010203', '3C22FB010203bed', '3c:22:fb:01:02:03e']) {
    t.equal(identifierKind(name), 'mac', name);
    t.match(auditBody(batch([count(name)])), [{ kind: 'identifier', path: 'readings[0].roomId' }], name);
  }
  for (const fine of ['lobby', 'cafe-2', 'office-2f', 'meeting-rooms', 'floor-12']) t.equal(identifierKind(fine), null, fine);
  const keyed = JSON.stringify({ batchId: 'hq@2026-11-22T19:04:14.000Z', readings: [{ ...count('lobby'), '3c:22:fb:01:02:03': 1 }] });
  const findings = auditBody(keyed);
  t.ok(findings.length >= 2, 'the key is an identifier and an undeclared field');
  t.notOk(JSON.stringify(findings).includes('3c:22:fb:01:02:03'), 'neither finding prints it, in its path or its detail');
});

t.test('only the collector’s own metrics pass, so no free-form field or unbounded number leaves', async (t) => {
  const temperature = { type: 'temperature', buildingId: 'hq', roomId: 'lobby', timestamp: ts, temperature: 0x3c22fb010203, sensorId: 'janes-iphone' };
  const co2 = { type: 'airQuality', buildingId: 'hq', roomId: 'lobby', timestamp: ts, co2: 0x3c22fb010203 };
  for (const reading of [temperature, co2]) {
    t.match(auditBody(batch([reading])), [{ kind: 'invalid-reading', path: 'readings[0].type', detail: /is not a metric the collector sends/ }], reading.type);
  }
  t.same(auditBody(batch([count('lobby'), { type: 'apClients', buildingId: 'hq', roomId: 'ap-1', timestamp: ts, apClients: 4 }])), []);
});

t.test('MACs in every spelling are found', async (t) => {
  for (const mac of ['3c:22:fb:01:02:03', '3C-22-FB-01-02-03', '3c22fb010203', '3c22.fb01.0203', '3c 22 fb 01 02 03', '3c_22_fb_01_02_03', 'ap 3c:22:fb:01:02:03 north']) {
    t.equal(identifierKind(mac), 'mac', mac);
    const findings = auditBody(batch([count(mac)]));
    t.match(findings, [{ kind: 'identifier', path: 'readings[0].roomId' }], mac);
    t.notOk(JSON.stringify(findings).includes(mac), 'the finding does not print it');
  }
});

t.test('hashes, UUIDs and base64 are found', async (t) => {
  t.equal(identifierKind('5d41402abc4b2a76b9719d911017c592'), 'hex');
  t.equal(identifierKind('deadbeefcafebabe'), 'hex');
  t.equal(identifierKind('123e4567-e89b-12d3-a456-426614174000'), 'uuid');
  t.equal(identifierKind('q83vEjRWeJA2Yq0Kx8bHe1+fAw=='), 'base64');
  t.equal(identifierKind('Xk9vQ2hT7pLmN3sR5tUvWxYz'), 'base64');
  for (const fine of ['lobby', 'office-2f', 'North-Wing-Second-Floor-Open-Office-2', 'hq@2026-11-22T19:04:14.000Z', 'ap-01', 'Meeting Room 12']) {
    t.equal(identifierKind(fine), null, fine);
  }
  t.match(auditBody(batch([count('5d41402abc4b2a76b9719d911017c592')])), [{ kind: 'identifier' }]);
});

t.test('keys outside the catalog are found, at any depth', async (t) => {
  const findings = auditBody(batch([{ ...count('lobby'), mac: 'x' }], { gateway: 'gw' }));
  t.match(findings, [
    { kind: 'unexpected-key', path: 'gateway' },
    { kind: 'unexpected-key', path: 'readings[0].mac' },
  ]);
  t.match(auditBody(batch([{ type: 'fingerprint', buildingId: 'hq', roomId: 'lobby', timestamp: ts }])), [{ kind: 'invalid-reading', path: 'readings[0].type' }]);
  t.match(auditBody(batch([{ ...count('lobby'), roomId: { device: '3c:22:fb:01:02:03' } }])), [{ kind: 'identifier', path: 'readings[0].roomId.device' }]);
});

t.test('bytes a parser would hide are found', async (t) => {
  const canonical = batch([count('lobby')]);
  t.match(auditBody(canonical.replace('"roomId":"lobby"', '"roomId":"3c:22:fb:01:02:03","roomId":"lobby"')), [{ kind: 'not-canonical' }]);
  t.match(auditBody(canonical.replace('lobby', 'l\\u006fbby')), [{ kind: 'not-canonical' }]);
  t.match(auditBody(`${canonical}\n`), [{ kind: 'not-canonical' }]);
  t.match(auditBody('{"batchId":'), [{ kind: 'not-json' }]);
});

t.test('numbers that could carry an identifier are found', async (t) => {
  t.match(auditBody(batch([count('lobby', 66_048_374_531)])), [{ kind: 'implausible-number', path: 'readings[0].totalDeviceCount' }]);
  t.match(auditBody(batch([{ ...count('lobby'), timestamp: 66_048_374_531_000_00 }])), [{ kind: 'implausible-number', path: 'readings[0].timestamp' }]);
});

t.test('a device address in any other spelling is found: decimal (OID) MAC, unpadded or grouped MAC, IPv4, IPv6, local hostname', async (t) => {
  const cases: Array<[string, string]> = [
    ['60.34.251.1.2.3', 'mac'],
    ['1.3.6.1.4.1.14823.2.2.1.4.1.2.1.60.34.251.1.2.3', 'mac'],
    ['3c:22:fb:1:2:3', 'mac'],
    ['3C22-FB01-0203', 'mac'],
    ['3c22fb-010203', 'mac'],
    ['10.20.0.11', 'ip'],
    ['lobby 192.168.1.23', 'ip'],
    ['fe80::3e22:fbff:fe01:203', 'mac'], // an EUI-64 address carries the MAC
    ['fe80::1%wlan0', 'ip'],
    ['2001:db8::1', 'ip'],
    ['janes-iphone.local', 'hostname'],
    ['laptop-7.lan', 'hostname'],
  ];
  for (const [value, kind] of cases) {
    t.equal(identifierKind(value), kind, value);
    const findings = auditBody(batch([count(value)]));
    t.match(findings, [{ kind: 'identifier', path: 'readings[0].roomId' }], value);
    t.notOk(JSON.stringify(findings).includes(value), 'the finding does not print it');
  }
  // What the collector itself sends stays clean.
  for (const fine of ['simulated-building@2026-11-23T05:21:19.984Z#1/2', 'Floor 2.5', 'v1.2.3', 'ap-zone-a-1', 'local', 'lan-party room']) {
    t.equal(identifierKind(fine), null, fine);
  }
});
