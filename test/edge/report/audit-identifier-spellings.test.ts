/**
 * Identifier spellings `ledger audit` once let through, though it promises to find a MAC in any
 * spelling, an IP address and base64 of 16 bytes or more: a MAC with mixed separators, zero-padded
 * decimal octets (a MAC as an SNMP index, an IPv4 address), and base64url or unpadded base64 (a 16-byte
 * key URL-safe was nearly always missed, unpadded half the time). Each is found in a real ledger file and
 * refused as a zone name by the config, which refuses what the audit would flag; names people choose,
 * mixed case and digits included, still pass both.
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
  ['a MAC as zero-padded decimal octets (an SNMP index)', '060.034.251.001.002.003', 'a MAC'],
  ['an IPv4 address with zero-padded octets', '010.020.000.011', 'an IP address'],
  ['16 bytes in base64url', 'LYp9IbqYsAMCd_C5ppqY2g', 'base64'],
  ['16 bytes in unpadded base64, without + or /', 'AJEK7qTPuEA3k9TZslQMuQ', 'base64'],
  ['32 bytes in base64url', 'PNei9tok-62q-8s1igBIP-Gs0KYicdUA8OEQybIUtG0', 'base64'],
];

/** Names that must stay sendable: lowercase with dashes, and mixed case that reads as words. */
const NAMES = ['floor-2-east-wing-lobby', 'North-Wing-Second-Floor-Open-Office-2', 'Building-North-Wing-2F', 'HQ-Floor2-Reception-Desk', 'MeetingRoom-3-EastWing', 'London-HQ-Floor-12-Kitchen', 'iPhone-Lab-3rd-Floor-West'];

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
