/**
 * The main job end to end: `simulate` (real SNMP agents and SSH servers on loopback, the real collector)
 * posting to a verifying ingest. Checks signatures, batch shape, counts against the ground truth, that
 * no identifier left the gateway, and that the ledger verifies and audits (and fails when tampered).
 */
import t from 'tap';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { validateReading } from '../../../shared/catalog/validate.js';
import { verify } from '../../../shared/hmac.js';
import { main } from '../../../edge/src/commands/main.js';
import { auditBody } from '../../../edge/src/report/audit.js';
import { chainHash } from '../../../edge/src/report/chain.js';
import { startVerifyingIngest } from '../report/verifying-ingest.js';
import { captureIo, spellings } from '../support/cli-io.js';
import { runSimulate } from '../support/simulate-run.js';

const TICKS = 20;
const INTERVAL_MS = 1000;
/**
 * The polls' and the post's bounds, well past the interval: on a loaded machine a slow answer makes a
 * tick late, not an AP silent (its devices frozen, the error rate up) nor a batch lost. Quick answers
 * keep the ticks INTERVAL_MS apart; only an AP that answers nothing (rebooting) holds its tick for the
 * whole bound, which makes the run slower, not wrong (this seed's 20 steps reboot none).
 */
const TIMEOUT_MS = 10_000;
const SECRET = 'e2e-ingest-signing-key';
/** The collector lags true moves by its hysteresis (a few polls); the bound leaves room for that. */
const MAX_ERROR_RATE = 0.2;

t.test('simulate posts signed aggregate batches that match the ground truth and carry no identifier', async (t) => {
  const ingest = await startVerifyingIngest(t, { default: 'the-shared-key-is-not-this-gateways', 'gw-e2e': SECRET });
  const stateDir = t.testdir({});
  const { exitCode, summary, out, building, macsSeen } = await runSimulate({
    intervalMs: INTERVAL_MS,
    requestTimeoutMs: TIMEOUT_MS,
    ingestTimeoutMs: TIMEOUT_MS,
    ticks: TICKS,
    seed: 42,
    devices: 30,
    accessPoints: 7,
    rebootRate: 0.05,
    ingest: { url: ingest.url, secret: SECRET, keyId: 'gw-e2e' },
    stateDir,
    output: 'json',
    devicesPerPerson: 1.5,
  });
  t.equal(exitCode, 0);
  t.ok(building, 'a building ran');
  const ticks = out.map((line) => JSON.parse(line) as Record<string, unknown>).filter((l) => 'tick' in l) as Array<{
    counts: Record<string, number>;
    truth: Record<string, number>;
    aps: Array<{ ap: string; ok: boolean }>;
    batch: { delivery: string };
  }>;
  t.equal(ticks.length, TICKS);
  t.equal(summary.ticks, TICKS);

  // Signatures and acceptance: every batch, over its exact bytes, with the key id.
  t.equal(ingest.received.length, TICKS, 'one batch per tick');
  t.same(ingest.unexpected, []);
  for (const [i, got] of ingest.received.entries()) {
    t.ok(verify(got.raw, got.headers['x-signature'], SECRET), `batch ${i + 1}: X-Signature is the HMAC of the exact bytes`);
    t.equal(got.headers['x-key-id'], 'gw-e2e');
    t.equal(got.status, 200, `batch ${i + 1} accepted`);
  }
  t.same(summary.deliveries, { accepted: TICKS });

  // Shape: every zone every tick, ratios, transitions, AP clients; all declared by the catalog.
  const zones = Object.keys(ticks[0]!.counts).sort();
  t.ok(zones.length >= 3);
  let transitionsSeen = 0;
  for (const [i, got] of ingest.received.entries()) {
    const batch = JSON.parse(got.raw.toString('utf8')) as { batchId: string; readings: Array<Record<string, unknown>> };
    t.same(Object.keys(batch).sort(), ['batchId', 'readings']);
    for (const r of batch.readings) t.ok(validateReading(r).ok, `batch ${i + 1} ${String(r.type)} validates against the catalog`);
    const of = (type: string) => batch.readings.filter((r) => r.type === type);
    t.same(of('totalDeviceCount').map((r) => r.roomId).sort(), zones, `batch ${i + 1}: totalDeviceCount for every zone`);
    for (const r of of('totalDeviceCount')) t.equal(r.totalDeviceCount, ticks[i]!.counts[r.roomId as string]);
    for (const r of of('ratioDeviceCount')) t.equal(r.ratioDeviceCount, Math.ceil((r.roomId ? ticks[i]!.counts[r.roomId as string]! : 0) / 1.5));
    t.equal(of('ratioDeviceCount').length, zones.length);
    t.same(of('apClients').map((r) => r.roomId).sort(), ticks[i]!.aps.filter((a) => a.ok).map((a) => a.ap).sort(), `batch ${i + 1}: apClients for each AP that answered`);
    transitionsSeen += of('zoneTransition').length;
    for (const r of of('zoneTransition')) t.not(r.roomId, r.fromRoomId);
    t.ok(batch.readings.every((r) => r.buildingId === 'simulated-building'));
  }
  t.ok(transitionsSeen > 0, `zoneTransition readings over the run: ${transitionsSeen}`);

  // Counts against the simulator's ground truth.
  let absolute = 0;
  let truthTotal = 0;
  for (const tick of ticks) {
    for (const zone of zones) {
      absolute += Math.abs((tick.counts[zone] ?? 0) - (tick.truth[zone] ?? 0));
      truthTotal += tick.truth[zone] ?? 0;
    }
    t.equal(
      Object.values(tick.counts).reduce((a, b) => a + b, 0) <= building!.deviceZones().size + 0,
      true,
      'never more devices counted than exist',
    );
  }
  const errorRate = absolute / truthTotal;
  t.comment(`error rate against ground truth: ${(errorRate * 100).toFixed(2)}% over ${TICKS} ticks (${absolute} off of ${truthTotal})`);
  t.equal(Math.abs(summary.errorRate - errorRate) < 1e-9, true, 'the summary reports the same error rate');
  t.ok(errorRate < MAX_ERROR_RATE, `error rate ${(errorRate * 100).toFixed(2)}% is under ${MAX_ERROR_RATE * 100}%`);

  // No identifier in any posted byte: no MAC the APs reported (in any spelling), no device hash.
  const posted = ingest.received.map((r) => r.raw.toString('latin1')).join('\n');
  const macs = new Set([...macsSeen, ...building!.deviceZones().keys()]);
  t.ok(macs.size >= 30, `${macs.size} device MACs known to the test`);
  let leaks = 0;
  for (const mac of macs) for (const form of spellings(mac)) if (posted.includes(form)) leaks++;
  t.equal(leaks, 0, 'no MAC of any device in any spelling in any posted byte');
  const db = new Database(join(stateDir, 'zones.sqlite'), { readonly: true });
  const ids = (db.prepare('SELECT device_id FROM tracked_devices').all() as Array<{ device_id: string }>).map((r) => r.device_id);
  db.close();
  t.ok(ids.length > 0);
  t.equal(ids.filter((id) => posted.includes(id) || posted.includes(id.slice(0, 16))).length, 0, 'no device hash (or a prefix of one) was posted');
  t.notOk(/[0-9a-f]{16,}/i.test(posted), 'nothing hash-like at all');
  for (const got of ingest.received) t.same(auditBody(got.raw.toString('utf8')), [], 'each posted body passes the audit');

  // The ledger holds exactly what was posted; it verifies and audits.
  const ledger = new Database(join(stateDir, 'ledger.sqlite'), { readonly: true });
  const bodies = (ledger.prepare('SELECT body FROM ledger_entries ORDER BY seq').all() as Array<{ body: string }>).map((r) => r.body);
  ledger.close();
  t.same(bodies, ingest.received.map((r) => r.raw.toString('utf8')), 'every posted body, byte for byte, in order');

  const verified = captureIo();
  t.equal(await main(['ledger', 'verify', '--state-dir', stateDir], verified.io), 0);
  t.match(verified.out.join(''), new RegExp(`${TICKS} entries, chain intact`));
  const audited = captureIo();
  t.equal(await main(['ledger', 'audit', '--state-dir', stateDir], audited.io), 0);
  t.match(audited.out.join(''), /^audit passed: 20 entries/);
  const exported = captureIo();
  t.equal(await main(['ledger', 'export', '--state-dir', stateDir], exported.io), 0);
  const lines = exported.out.join('').trim().split('\n').map((l) => JSON.parse(l) as { seq: number; prevHash: string; hash: string; body: string });
  t.equal(lines.length, TICKS);
  t.ok(lines.every((l) => chainHash(l.prevHash, l.body) === l.hash), 'an auditor can recompute every hash from the export');

  // Tampering: an edited count breaks verify; a MAC slipped in (chain recomputed) fails the audit.
  const copy = join(stateDir, 'tampered-ledger.sqlite');
  const src = new Database(join(stateDir, 'ledger.sqlite'), { readonly: true });
  await src.backup(copy);
  src.close();
  const w = new Database(copy);
  const row = w.prepare('SELECT body FROM ledger_entries WHERE seq = 5').get() as { body: string };
  w.prepare('UPDATE ledger_entries SET body = ? WHERE seq = 5').run(row.body.replace(/"totalDeviceCount":(\d+)/, (_m, n: string) => `"totalDeviceCount":${Number(n) + 7}`));
  w.close();
  const broken = captureIo();
  t.equal(await main(['ledger', 'verify', '--ledger', copy], broken.io), 1, 'verify fails on an edited entry');
  t.match(broken.out.join(''), /seq 5: hash does not match the body/);

  const leaky = join(stateDir, 'leaky-ledger.sqlite');
  const src2 = new Database(join(stateDir, 'ledger.sqlite'), { readonly: true });
  await src2.backup(leaky);
  src2.close();
  const w2 = new Database(leaky);
  const all = w2.prepare('SELECT seq, body FROM ledger_entries ORDER BY seq').all() as Array<{ seq: number; body: string }>;
  let prev = '0'.repeat(64);
  const mac = [...macs][0]!;
  for (const entry of all) {
    const body = entry.seq === 3 ? entry.body.replace(/"roomId":"([^"]+)"/, `"roomId":"$1 ${mac}"`) : entry.body;
    const hash = chainHash(prev, body);
    w2.prepare('UPDATE ledger_entries SET body = ?, prev_hash = ?, hash = ? WHERE seq = ?').run(body, prev, hash, entry.seq);
    prev = hash;
  }
  w2.close();
  const stillChained = captureIo();
  t.equal(await main(['ledger', 'verify', '--ledger', leaky], stillChained.io), 0, 'a rewritten chain verifies…');
  const caught = captureIo();
  t.equal(await main(['ledger', 'audit', '--ledger', leaky], caught.io), 1, '…but the audit finds the MAC');
  t.match(caught.out.join(''), /seq 3 readings\[0\]\.roomId: identifier: .* looks like a MAC/);
  t.notOk(caught.out.join('').includes(mac), 'the audit report does not print the MAC');
});
