import t from 'tap';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sign } from '../../shared/hmac.js';

const tsx = join(process.cwd(), 'node_modules/.bin/tsx');
const dir = mkdtempSync(join(tmpdir(), 'lintel-sign-'));
const secretFile = join(dir, 'secret');
writeFileSync(secretFile, 'operator-secret\n');

t.test('prints the signature of the exact body, secret from a file', async (t) => {
  const body = '{"name":"acme"} ';
  const out = execFileSync(tsx, ['tools/sign.ts', '--secret-file', secretFile, '--body', body], { encoding: 'utf8' });
  t.equal(out.trim(), sign(body, 'operator-secret'), 'the trailing newline of the secret file is not part of the secret');
  const bodyFile = join(dir, 'body.json');
  writeFileSync(bodyFile, body);
  t.equal(execFileSync(tsx, ['tools/sign.ts', '--secret-file', secretFile, '--body-file', bodyFile], { encoding: 'utf8' }).trim(), sign(body, 'operator-secret'));
});

t.test('signs stdin, and empty bytes for a GET', async (t) => {
  const out = execFileSync(tsx, ['tools/sign.ts', '--secret-env', 'LINTEL_TEST_SECRET'], { input: '', encoding: 'utf8', env: { ...process.env, LINTEL_TEST_SECRET: 's' } });
  t.equal(out.trim(), sign('', 's'));
});

t.test('refuses a secret on the command line or none at all', async (t) => {
  const r = spawnSync(tsx, ['tools/sign.ts', '--secret', 'x', '--body', '{}'], { encoding: 'utf8' });
  t.equal(r.status, 2);
  t.match(r.stderr, /sign: .*secret/);
  const none = spawnSync(tsx, ['tools/sign.ts', '--body', '{}'], { encoding: 'utf8' });
  t.equal(none.status, 2);
  t.match(none.stderr, /give the secret with --secret-file or --secret-env/);
});
