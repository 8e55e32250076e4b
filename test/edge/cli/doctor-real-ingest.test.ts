/**
 * `lintel-edge doctor` against the real telemetry ingest (test/cloud/telemetry/support/harness.ts): with
 * the gateway's own key, or the shared key and no key id, the ingest line passes and nothing is stored; with a key id the service does not
 * know, or the right id and another secret, it fails and names the key.
 */
import t from 'tap';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { doctor } from '../../../edge/src/commands/doctor.js';
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
    return { code, stdout: out.join('') };
  };

  const good = await run('good', { secretFile, keyId: KEY_ID });
  t.comment(good.stdout);
  t.equal(good.code, 0, 'every check passes');
  t.match(good.stdout, new RegExp(`ok {3}ingest .*\\(key id ${KEY_ID}\\): reachable ✓ {2}signature accepted ✓ \\(400: the empty probe refused after the signature check, nothing stored\\)`));
  t.match(good.stdout, /ok {3}clock/);
  t.equal(await countRows(h.pool, 'readings'), 0, 'the probe stored no reading');
  t.equal(await countRows(h.pool, 'ingest_batches'), 0, 'and claimed no batch id');

  // Without a key id, the gateway signs with the shared ring, the contract's fallback.
  const sharedFile = join(dir, 'shared.key');
  writeFileSync(sharedFile, `${SHARED_SECRET}\n`, { mode: 0o600 });
  const shared = await run('shared', { secretFile: sharedFile });
  t.equal(shared.code, 0, 'the shared key passes too');
  t.match(shared.stdout, /ok {3}ingest {4}http:\/\/[^ ]+\/ingest: reachable ✓ {2}signature accepted ✓ \(400/);

  const unknownId = await run('unknown-id', { secretFile, keyId: 'gw-nobody' });
  t.equal(unknownId.code, 1);
  t.match(unknownId.stdout, /FAIL ingest .*\(key id gw-nobody\): reachable ✓ {2}signature refused ✗ \(check ingest.secretFile and ingest.keyId\)/);

  const wrongSecret = await run('wrong-secret', { secretFile: wrongFile, keyId: KEY_ID });
  t.equal(wrongSecret.code, 1);
  t.match(wrongSecret.stdout, /FAIL ingest .*: reachable ✓ {2}signature refused ✗/);
  t.equal(await countRows(h.pool, 'readings'), 0);
});
