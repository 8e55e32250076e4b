/**
 * The scan of armed keys (armed-keys.ts, armed-scan.wasm) against the general path: a record it calls
 * suppressed is one the general path parses as an alert of an alertable type whose cooldown key is
 * armed past `now`, on generated records of every shape (escapes, non-ASCII, nesting, repeated keys,
 * wrong types, blank and overlong names, names holding `:` and `%`, truncations, stray bytes); a record
 * outside the alertable set, or whose names hold `:` or `%`, is left to the general path. The committed
 * module is the one its source builds.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import t from 'tap';
import { cooldownKey, parseAlertRecord } from '../../../cloud/notification/alert-event.js';
import { ArmedKeys } from '../../../cloud/notification/armed-keys.js';
import { ALERTABLE_METRICS } from '../../../shared/catalog/metrics.js';

const NOW = 1_000_000;
const telemetryRecord = { alertId: 'b1:r1:temperature:temperature:1700000000000', type: 'temperature', field: 'temperature', buildingId: 'b1', roomId: 'r1', value: 31.5, bound: 'maxTemperature', threshold: 28, timestamp: 1_700_000_000_000 };
const bytes = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value));

/** What the general path says: suppressed here when the record parses, is alertable and its key is armed past now. */
function generalSaysSuppressed(value: Buffer, armed: ReadonlyMap<string, number>): boolean {
  const parsed = parseAlertRecord(value);
  if (!parsed.ok || !ALERTABLE_METRICS.includes(parsed.alert.type)) return false;
  const until = armed.get(cooldownKey(parsed.alert));
  return until !== undefined && until > NOW;
}

t.test('a telemetry alert whose key is armed is suppressed from its bytes; anything unusual goes to the general path', async (t) => {
  const keys = new ArmedKeys();
  t.equal(keys.scan([{ value: bytes(telemetryRecord) }], NOW), undefined, 'nothing armed: no scan at all');
  keys.set(cooldownKey(telemetryRecord), NOW + 300_000, NOW);
  const cases: Array<[string, Buffer | null, number]> = [
    ['the record telemetry writes', bytes(telemetryRecord), 1],
    ['with whitespace around and inside', Buffer.from(` \n{ "alertId" : "a1",\t"type":"temperature", "field":"temperature","buildingId":"b1","roomId":"r1" }\r\n`), 1],
    ['value, bound and threshold null', bytes({ ...telemetryRecord, value: null, bound: null, threshold: null }), 1],
    ['extra keys of every plain kind', bytes({ ...telemetryRecord, a: true, b: false, c: null, d: -0.5e-3, e: 'x' }), 1],
    ['another room', bytes({ ...telemetryRecord, roomId: 'r2' }), 0],
    ['no value', null, 0],
    ['an escaped name', Buffer.from(JSON.stringify(telemetryRecord).replace('"b1"', '"\\u0062\\u0031"')), 0],
    ['a nested extra', bytes({ ...telemetryRecord, extra: { a: 1 } }), 0],
    ['an array extra', bytes({ ...telemetryRecord, extra: [1] }), 0],
    ['a name given twice', Buffer.from(JSON.stringify(telemetryRecord).replace('{', '{"roomId":"r1",')), 0],
    ['a blank alertId', bytes({ ...telemetryRecord, alertId: '   ' }), 0],
    ['an alertId of 257 characters', bytes({ ...telemetryRecord, alertId: 'a'.repeat(257) }), 0],
    ['a string value', bytes({ ...telemetryRecord, value: '31.5' }), 0],
    ['a numeric bound', bytes({ ...telemetryRecord, bound: 3 }), 0],
    ['a boolean threshold', bytes({ ...telemetryRecord, threshold: true }), 0],
    ['a null roomId', bytes({ ...telemetryRecord, roomId: null }), 0],
    ['truncated', bytes(telemetryRecord).subarray(0, 40), 0],
    ['trailing bytes', Buffer.concat([bytes(telemetryRecord), Buffer.from('x')]), 0],
    ['a leading zero', Buffer.from(JSON.stringify(telemetryRecord).replace('31.5', '031.5')), 0],
    ['a byte order mark', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes(telemetryRecord)]), 0],
  ];
  const verdicts = keys.scan(cases.map(([, value]) => ({ value })), NOW);
  cases.forEach(([what, value, expected], i) => {
    t.equal(verdicts?.[i], expected, what);
    if (expected === 1 && value) t.ok(generalSaysSuppressed(value, new Map([[cooldownKey(telemetryRecord), NOW + 300_000]])), `${what}: the general path agrees`);
  });
  t.same([...(keys.scan([{ value: bytes(telemetryRecord) }], NOW + 300_000) ?? [])], [0], 'expired at its expiry');
  keys.delete(cooldownKey(telemetryRecord));
  t.equal(keys.scan([{ value: bytes(telemetryRecord) }], NOW), undefined, 'released: nothing armed');
});

t.test('a record outside the alertable set is left to the general path, even with its key armed', async (t) => {
  // `:` in names: joined as they are, this unsupported type would make the key of a temperature alert of
  // room `r1:x`. Escaped, the keys differ; and were the unsupported record's own key armed, the scan
  // still leaves it to the general path, which counts it unsupported_metric.
  const alertable = { ...telemetryRecord, buildingId: 'b1', roomId: 'r1:x' };
  const colliding = { ...telemetryRecord, type: 'temperature:temperature', field: 'b1', buildingId: 'r1', roomId: 'x' };
  t.not(cooldownKey(colliding), cooldownKey(alertable), 'the two keys differ');
  const unsupported = { ...telemetryRecord, type: 'Temperature' };
  const keys = new ArmedKeys();
  keys.set(cooldownKey(alertable), NOW + 300_000, NOW);
  keys.set(cooldownKey(unsupported), NOW + 300_000, NOW);
  const verdicts = keys.scan([{ value: bytes(alertable) }, { value: bytes(colliding) }, { value: bytes(unsupported) }], NOW);
  t.same([...(verdicts ?? [])], [0, 0, 0], 'none is suppressed from its bytes');
  const armed = new Map([[cooldownKey(alertable), NOW + 300_000], [cooldownKey(unsupported), NOW + 300_000]]);
  t.ok(generalSaysSuppressed(bytes(alertable), armed), 'the general path suppresses the alertable one');
  t.notOk(generalSaysSuppressed(bytes(colliding), armed), 'and counts the other unsupported_metric, not suppressed');
});

t.test('a record whose names hold `:` or `%` is left to the general path, which escapes them in the key', async (t) => {
  // Joined as they are, room `hq%3Alab` would make the escaped key of room `hq:lab`.
  const withColon = { ...telemetryRecord, buildingId: 'acme', roomId: 'hq:lab' };
  const keys = new ArmedKeys();
  keys.set(cooldownKey(withColon), NOW + 300_000, NOW);
  const armed = new Map([[cooldownKey(withColon), NOW + 300_000]]);
  const cases: Array<[string, Record<string, unknown>, boolean]> = [
    ['the room holding `:` whose key is armed', withColon, true],
    ['a room holding `%3A`', { ...withColon, roomId: 'hq%3Alab' }, false],
    ['a building holding `%3A`', { ...withColon, buildingId: 'acme%3Ahq', roomId: 'lab' }, false],
    ['a field holding `%3A`', { ...telemetryRecord, field: 'temperature%3Aacme', buildingId: 'hq:lab', roomId: 'r1' }, false],
    ['a building holding `:`', { ...withColon, buildingId: 'acme:hq', roomId: 'lab' }, false],
  ];
  const verdicts = keys.scan(cases.map(([, record]) => ({ value: bytes(record) })), NOW);
  cases.forEach(([what, record, general], i) => {
    t.equal(verdicts?.[i], 0, `${what}: not suppressed from its bytes`);
    t.equal(generalSaysSuppressed(bytes(record), armed), general, `${what}: the general path ${general ? 'suppresses it' : 'does not suppress it'}`);
  });
});

const names = fc.oneof(
  { weight: 30, arbitrary: fc.constantFrom('b1', 'r1', 'temperature', 'co2', 'airQuality', ' b', 'x y') },
  // `:` and `%`, which the general path escapes in the key (joined as they are, these make each other's
  // keys), with names they would merge with. A record holding them always takes the general path.
  { weight: 4, arbitrary: fc.constantFrom('r:2', 'hq:lab', 'hq%3Alab', 'hq%253Alab', 'hq', 'lab', 'acme', 'acme:hq', 'acme%3Ahq', '%', ':', '%25', '%3A') },
  fc.constantFrom('', ' ', '   ', 'a'.repeat(256), 'a'.repeat(257), 'é', 'b\u0000', 'r\u2028', 'q"u', 'back\\slash', '\ud800', 'tab\t'),
  fc.string({ maxLength: 6 }),
);
// Types: mostly alertable, as real records are; some outside the set, some whose `:` can make another's key.
const types = fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...ALERTABLE_METRICS) }, { weight: 2, arbitrary: fc.constantFrom('temperature:temperature', 'co2', 'Temperature') }, names);
const values = fc.oneof(names, fc.double(), fc.integer(), fc.constant(null), fc.boolean(), fc.constant({ a: 1 }), fc.constant([1]));
const fieldNames = ['alertId', 'type', 'field', 'buildingId', 'roomId', 'value', 'bound', 'threshold'] as const;

/** A record as text: the read fields (each usually present and of its usual type), extras, repeats, spacing. */
const records = fc
  .record({
    present: fc.array(fc.nat(19), { minLength: 8, maxLength: 8 }),
    odd: fc.array(fc.nat(19), { minLength: 8, maxLength: 8 }),
    strings: fc.array(names, { minLength: 8, maxLength: 8 }),
    type: types,
    numbers: fc.array(fc.oneof(fc.double(), fc.integer(), fc.constant(null)), { minLength: 8, maxLength: 8 }),
    others: fc.array(values, { minLength: 8, maxLength: 8 }),
    extras: fc.array(fc.tuple(fc.oneof({ weight: 8, arbitrary: fc.constantFrom('timestamp', '__proto__', 'sensorId') }, fc.constantFrom('roomId', 'alertId'), fc.string({ maxLength: 4 })), values), { maxLength: 2 }),
    space: fc.oneof({ weight: 12, arbitrary: fc.constantFrom('', ' ', '\n', '\t ') }, fc.constant('\u00a0')),
    mutate: fc.oneof({ weight: 6, arbitrary: fc.constant(null) }, fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 }), fc.boolean())),
  })
  .map(({ present, odd, strings, type, numbers, others, extras, space, mutate }) => {
    const parts: string[] = [];
    fieldNames.forEach((name, i) => {
      // Each field is usually there (optional ones half the time), and usually of its own type.
      if ((present[i] ?? 0) === 0 || (i >= 5 && (present[i] ?? 0) < 10)) return;
      const numeric = name === 'value' || name === 'threshold';
      const value = (odd[i] ?? 0) === 0 ? others[i] : numeric ? numbers[i] : name === 'type' ? type : strings[i];
      parts.push(`${space}${JSON.stringify(name)}${space}:${space}${JSON.stringify(value ?? null)}`);
    });
    for (const [key, value] of extras) parts.push(`${JSON.stringify(key)}:${JSON.stringify(value)}`);
    let text = `${space}{${parts.join(',')}}${space}`;
    if ((odd[0] ?? 0) === 19) text = text.replace(/[a-z]/, (c) => `\\u00${c.charCodeAt(0).toString(16)}`);
    const buffer = Buffer.from(text);
    if (mutate) {
      const [at, byte, truncate] = mutate;
      const position = at % buffer.length;
      return truncate ? buffer.subarray(0, position) : Buffer.concat([buffer.subarray(0, position), Buffer.from([byte]), buffer.subarray(position + 1)]);
    }
    return buffer;
  });

/** The record with the `:` of its names written `%3A`: joined as they are, its names would make the escaped key of the original's. */
const escapedTwin = (value: Buffer) => Buffer.from(value.toString('latin1').replace(/hq:lab|acme:hq|r:2/g, (name) => name.replace(':', '%3A')), 'latin1');

t.test('on generated records, suppressed from the bytes only where the general path suppresses without a round trip', async (t) => {
  let taken = 0;
  let left = 0;
  const keys = new ArmedKeys();
  fc.assert(
    fc.property(fc.array(records, { minLength: 1, maxLength: 30 }), fc.array(fc.integer({ min: -2, max: 3 }), { minLength: 30, maxLength: 30 }), (batch, expiries) => {
      keys.clear();
      const armed = new Map<string, number>();
      batch.forEach((value, i) => {
        const parsed = parseAlertRecord(value);
        if (!parsed.ok) return;
        const offset = expiries[i] ?? 0;
        if (offset === -2) return; // not armed here
        const until = NOW + offset;
        armed.set(cooldownKey(parsed.alert), until);
        keys.set(cooldownKey(parsed.alert), until, NOW);
      });
      // Scanned with the twins of the records whose names hold `:`, which are never armed themselves.
      const twins = batch.map(escapedTwin).filter((twin, i) => !twin.equals(batch[i] ?? twin));
      const all = [...batch, ...twins];
      const verdicts = keys.scan(all.map((value) => ({ value })), NOW);
      all.forEach((value, i) => {
        const general = generalSaysSuppressed(value, armed);
        const scanned = verdicts?.[i] === 1;
        if (scanned && !general) throw new Error(`scan suppressed a record the general path does not: ${JSON.stringify(value.toString('latin1'))}`);
        if (scanned) taken += 1;
        else if (general) left += 1;
      });
    }),
    { numRuns: 1000 },
  );
  // About 400 a run: records whose names hold `:` or `%` (a tenth of the names) are left to the general path.
  t.ok(taken > 300, `the scan took ${taken} generated records itself (and left ${left} the general path suppresses)`);
});

t.test('keys past the table’s room are not remembered, expired ones make room, and a long run stays exact', async (t) => {
  const keys = new ArmedKeys();
  const keyOf = (n: number) => cooldownKey({ ...telemetryRecord, roomId: `room-${n}` });
  for (let n = 0; n < 60_000; n++) keys.set(keyOf(n), NOW + 10, NOW);
  t.equal(keys.until(keyOf(59_999)), undefined, 'the table holds at most three quarters of its slots');
  t.equal(keys.until(keyOf(0)), NOW + 10);
  // A second later (a full table is swept at most once a second): the first keys expired, so new ones fit.
  for (let n = 60_000; n < 70_000; n++) keys.set(keyOf(n), NOW + 5000, NOW + 1020);
  t.equal(keys.until(keyOf(69_999)), NOW + 5000, 'room made by dropping expired keys');
  t.equal(keys.until(keyOf(0)), undefined);
  keys.delete(keyOf(69_999));
  t.equal(keys.until(keyOf(69_999)), undefined);
  const verdicts = keys.scan([{ value: bytes({ ...telemetryRecord, roomId: 'room-65000' }) }, { value: bytes({ ...telemetryRecord, roomId: 'room-69999' }) }], NOW + 1020);
  t.same([...(verdicts ?? [])], [1, 0]);
});

t.test('the committed module is what its source compiles to (npm run build:wasm)', async (t) => {
  const root = fileURLToPath(new URL('../../../', import.meta.url));
  const out = join(mkdtempSync(join(tmpdir(), 'armed-scan-')), 'armed-scan.wasm');
  const script = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts['build:wasm'] as string;
  const args = script.replace(/^asc /, '').replace(/--outFile \S+/, `--outFile ${out}`).split(' ');
  execFileSync(join(root, 'node_modules/.bin/asc'), args, { cwd: root, stdio: 'pipe' });
  t.ok(readFileSync(out).equals(readFileSync(join(root, 'cloud/notification/armed-scan.wasm'))), 'rebuild the module with npm run build:wasm');
});
