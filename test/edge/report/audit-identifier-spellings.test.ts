/**
 * Identifier spellings `ledger audit` once let through, though it promises to find a MAC in any
 * spelling and an IP address: a MAC with mixed separators or joined to a word, zero-padded decimal
 * octets (a MAC as an SNMP index, an IPv4 address padded to three digits), and an IPv4 address after a
 * word and a dot. Each is found in a real ledger file and refused as a zone name by the config, which
 * refuses what the audit would flag. Names people choose (codes such as `WiFi6E` or `B12L3R04`, dates,
 * times, room numbers with dots) still pass both.
 */
import t from 'tap';
import { join } from 'node:path';
import { main } from '../../../edge/src/commands/main.js';
import { parseConfig, type DialectInfo } from '../../../edge/src/config/index.js';
import { identifierKind } from '../../../edge/src/report/identifiers.js';
import { openLedger } from '../../../edge/src/report/ledger.js';
import { captureIo } from '../support/cli-io.js';

const ts = 1795374254000;
const body = (roomId: string) =>
  JSON.stringify({ batchId: 'hq@2026-11-22T19:04:14.000Z', readings: [{ type: 'totalDeviceCount', buildingId: 'hq', roomId, timestamp: ts, totalDeviceCount: 3 }] });

/** Fixed values, so a run is repeatable: each was missed before (random keys of each form, drawn once). */
const MISSED: ReadonlyArray<readonly [string, string, string]> = [
  ['a MAC with mixed separators', '3c:22:fb-01-02-03', 'a MAC'],
  ['a MAC with underscores', 'ap_3c_22_fb_01_02_03', 'a MAC'],
  ['a MAC without leading zeros, joined to a word', 'ap-3c-22-fb-1-2-3', 'a MAC'],
  ['a MAC as zero-padded decimal octets (an SNMP index)', '060.034.251.001.002.003', 'a MAC'],
  ['an IPv4 address with zero-padded octets', '010.020.000.011', 'an IP address'],
  ['an IPv4 address after a word and a dot', 'ap.10.20.0.11', 'an IP address'],
];

/** Names that must stay sendable: lowercase with dashes, mixed case, codes with digits, dates and room numbers. */
const NAMES = [
  'floor-2-east-wing-lobby',
  'North-Wing-Second-Floor-Open-Office-2',
  'Building-North-Wing-2F',
  'HQ-Floor2-Reception-Desk',
  'MeetingRoom-3-EastWing',
  'London-HQ-Floor-12-Kitchen',
  'iPhone-Lab-3rd-Floor-West',
  'HQ-Lobby-WiFi6E-Ceiling-AP',
  '3F-EastWing-AP01-WiFi6E',
  'AP-2F-MeetingRm3B-Ceiling',
  'Main-Campus-B1F2R305-Lab',
  'Campus_North_B12L3R04_Lab',
  'Office-SW1A2AA-Reception',
  'AP-NorthWingSecondFloor-03',
  'SmartLab2-OpenSpaceNorthEast',
  'Room 2.01.03.12',
  'Raum 3.2.01.05',
  'Event-2026-11-27-10.30.00',
  'Slots 08.00-10.30-12.00',
  'Building-A_Floor-3_Room-12',
];
const dialects = new Map<string, DialectInfo>([['aruba-aos', { transport: 'snmp' }]]);

/** A config whose one zone is `zone`, as parseConfig reads it (the AP's secret file is never reached). */
const configWithZone = (zone: string) => `
buildingId: hq
pollIntervalS: 10
requestTimeoutS: 5
zones:
  "${zone}":
accessPoints:
  - { name: lobby-1, zone: "${zone}", dialect: aruba-aos, transport: snmp, host: 10.0.0.5, snmp: { version: 2c, communityFile: community } }
`;

/** `ledger audit` over a ledger file holding one entry with `roomId`: its exit code and report. */
async function auditOf(dir: string, name: string, roomId: string): Promise<{ code: number; text: string }> {
  const path = join(dir, `${name}.sqlite`);
  const ledger = openLedger(path);
  ledger.append(body(roomId), ts);
  ledger.close();
  const { out, io } = captureIo();
  const code = await main(['ledger', 'audit', '--ledger', path], io);
  return { code, text: out.join('') };
}

t.test('each spelling once missed is found by ledger audit, without being printed', async (t) => {
  const dir = t.testdir({});
  for (const [[what, value, words], i] of MISSED.map((m, i) => [m, i] as const)) {
    const { code, text } = await auditOf(dir, `missed-${i}`, value);
    t.equal(code, 1, `${what}: ${text}`);
    t.match(text, new RegExp(`readings\\[0\\]\\.roomId: identifier: value .* looks like ${words}`), what);
    t.notOk(text.includes(value), `${what}: the report does not print it`);
  }
});

t.test('each spelling once missed is refused as a zone name, saying what it looks like', async (t) => {
  for (const [what, value, words] of MISSED) {
    const result = parseConfig(configWithZone(value), '/nowhere/config.yaml', { dialects });
    t.notOk(result.ok, what);
    if (!result.ok) t.match(result.errors.join('\n'), new RegExp(`^zones\\.${value.replace(/[.]/g, '\\.')}: not accepted as a key; it looks like ${words};`, 'm'), what);
  }
});

t.test('names people choose pass the audit and are taken as zone names', async (t) => {
  const dir = t.testdir({});
  for (const [name, i] of NAMES.map((n, i) => [n, i] as const)) {
    t.equal(identifierKind(name), null, name);
    const { code, text } = await auditOf(dir, `name-${i}`, name);
    t.equal(code, 0, `${name}: ${text}`);
    const result = parseConfig(configWithZone(name), '/nowhere/config.yaml', { dialects });
    const zoneErrors = result.ok ? [] : result.errors.filter((e) => e.startsWith('zones.') || e.includes('.zone:'));
    t.same(zoneErrors, [], `${name} is a zone name`);
  }
});
