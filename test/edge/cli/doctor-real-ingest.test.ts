/**
 * `lintel-edge doctor` against the real telemetry ingest (test/cloud/telemetry/support/harness.ts): with
 * the gateway's own key, or the shared key and no key id, the ingest line passes and nothing is stored; with a key id the service does not
 * know, or the right id and another secret, it fails and names the key. With a key bound to another
 * building than the config's, it fails and names the building: the probe, an empty batch then, was
 * refused for its shape before the building was looked at, so doctor passed, and the collector's every
 * batch was then refused 403.
 */
import t from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { doctor } from '../../../edge/src/commands/doctor.js';
import { auditBody } from '../../../edge/src/report/audit.js';
import { openLedger } from '../../../edge/src/report/ledger.js';
import { startSimulatedBuilding } from '../../../edge/src/simulate/index.js';
import { SHARED_SECRET, countRows, startHarness } from '../../cloud/telemetry/support/harness.js';
import { writeBuildingConfig } from './building-config.js';

const KEY_ID = 'gw-doctor';

t.test('doctor proves URL, key and key id against the real ingest without storing anything', async (t) => {
  const h = await startHarness(t);
  const dir = t.testdir({});
  const workDir = join(dir, 'building');
  const building = await startSimulatedBuilding({ workDir, seed: 11, accessPoints: 3, devices: 6, rebootRate: 0 });
  t.teardown(() => building.stop());
  const secret = await h.keys.add(KEY_ID, ['test-building'], 'doctor test gateway');
  const secretFile = join(dir, 'gateway.key');
  writeFileSync(secretFile, `${secret}\n`, { mode: 0o600 });
  const wrongFile = join(dir, 'wrong.key');
  writeFileSync(wrongFile, 'not-the-gateway-secret-0123\n', { mode: 0o600 });

  const run = async (name: string, ingest: { secretFile: string; keyId?: string }) => {
    const sub = join(dir, name);
    // The state directory as the install step makes it: doctor run as root (these tests) creates none.
    mkdirSync(join(sub, 'state'), { recursive: true, mode: 0o700 });
    const config = writeBuildingConfig(building, workDir, sub, { ingest: { url: `${h.url}/ingest`, ...ingest }, pollIntervalS: 5, requestTimeoutS: 3 });
    const out: string[] = [];
    const code = await doctor({ config, clock: () => Date.now() }, { out: (s) => void out.push(s), err: (s) => void out.push(s) });
    return { code, stdout: out.join(''), ledger: join(sub, 'state', 'ledger.sqlite') };
  };

  const good = await run('good', { secretFile, keyId: KEY_ID });
  t.comment(good.stdout);
  t.equal(good.code, 0, 'every check passes');
  t.match(
    good.stdout,
    new RegExp(`ok {3}ingest .*\\(key id ${KEY_ID}\\): reachable ✓ {2}signature accepted ✓ {2}building "test-building" accepted ✓ \\(400: the probe's reading, dated 2001, refused as older than the data kept; nothing stored\\)`),
  );
  t.match(good.stdout, /ok {3}clock/);
  t.equal(await countRows(h.pool, 'readings'), 0, 'the probe stored no reading');
  t.equal(await countRows(h.pool, 'ingest_batches'), 0, 'and claimed no batch id');
  // The probe is recorded in the ledger like any batch, and passes its audit like any batch.
  const ledger = openLedger(good.ledger, { readonly: true });
  const entries = [...ledger.entries()];
  ledger.close();
  t.equal(entries.length, 1, 'the probe is in the ledger');
  t.same(auditBody(entries[0]!.body), [], 'and the audit finds nothing in it');
  t.equal(entries[0]!.delivery, 'rejected', 'refused, as a probe is');

  // A key the service confines to another building: the collector's every batch would be refused.
  const elsewhereFile = join(dir, 'elsewhere.key');
  writeFileSync(elsewhereFile, `${await h.keys.add('gw-elsewhere', ['another-building'], 'a gateway of another building')}\n`, { mode: 0o600 });
  const elsewhere = await run('elsewhere', { secretFile: elsewhereFile, keyId: 'gw-elsewhere' });
  t.comment(elsewhere.stdout);
  t.equal(elsewhere.code, 1, 'a problem');
  t.match(
    elsewhere.stdout,
    /FAIL ingest .*\(key id gw-elsewhere\): reachable ✓ {2}signature accepted ✓ {2}building refused ✗: key gw-elsewhere may not write building "test-building" \(buildingId in the config\)/,
  );
  t.match(elsewhere.stdout, /keys-cli\.ts bind gw-elsewhere --building test-building/, 'and how to let it');
  t.match(elsewhere.stdout, /result: 1 problem\n/);
  t.equal(await countRows(h.pool, 'readings'), 0, 'nothing stored');

  // Without a key id, the gateway signs with the shared ring, the contract's fallback.
  const sharedFile = join(dir, 'shared.key');
  writeFileSync(sharedFile, `${SHARED_SECRET}\n`, { mode: 0o600 });
  const shared = await run('shared', { secretFile: sharedFile });
  t.equal(shared.code, 0, 'the shared key passes too');
  t.match(shared.stdout, /ok {3}ingest {4}http:\/\/[^ ]+\/ingest: reachable ✓ {2}signature accepted ✓ {2}building "test-building" accepted ✓ \(400/);

  const unknownId = await run('unknown-id', { secretFile, keyId: 'gw-nobody' });
  t.equal(unknownId.code, 1);
  t.match(unknownId.stdout, /FAIL ingest .*\(key id gw-nobody\): reachable ✓ {2}signature refused ✗ \(check ingest.secretFile and ingest.keyId\)/);

  const wrongSecret = await run('wrong-secret', { secretFile: wrongFile, keyId: KEY_ID });
  t.equal(wrongSecret.code, 1);
  t.match(wrongSecret.stdout, /FAIL ingest .*: reachable ✓ {2}signature refused ✗/);
  t.equal(await countRows(h.pool, 'readings'), 0);
});
