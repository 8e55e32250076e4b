import t from 'tap';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sign } from '../../shared/hmac.js';

const tsx = join(process.cwd(), 'node_modules/.bin/tsx');
const dir = mkdtempSync(join(tmpdir(), 'lintel-sign-'));
const secretFile = join(dir, 'secret');
writeFileSync(secretFile, 'operator-secret\n');
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

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

t.test('a key ring signs with its current key, trimmed, as the services verify it', async (t) => {
  const env = (value: string) => ({ ...process.env, LINTEL_TEST_SECRET: value });
  const signed = (value: string) => execFileSync(tsx, ['tools/sign.ts', '--secret-env', 'LINTEL_TEST_SECRET', '--body', '{}'], { encoding: 'utf8', env: env(value) }).trim();
  t.equal(signed('new-key,old-key'), sign('{}', 'new-key'), 'new,old: the new key');
  t.equal(signed(' new-key , old-key'), sign('{}', 'new-key'), 'spaces around keys are not part of them');
  const empty = spawnSync(tsx, ['tools/sign.ts', '--secret-env', 'LINTEL_TEST_SECRET', '--body', '{}'], { encoding: 'utf8', env: env(' , ') });
  t.equal(empty.status, 2);
  t.match(empty.stderr, /^sign: the secret holds no key/m);
});

t.test('refuses a secret on the command line or none at all', async (t) => {
  const r = spawnSync(tsx, ['tools/sign.ts', '--secret', 'x', '--body', '{}'], { encoding: 'utf8' });
  t.equal(r.status, 2);
  t.match(r.stderr, /sign: .*secret/);
  const none = spawnSync(tsx, ['tools/sign.ts', '--body', '{}'], { encoding: 'utf8' });
  t.equal(none.status, 2);
  t.match(none.stderr, /give the secret with --secret-file or --secret-env/);
});

t.test('unreadable files, an unset variable and doubled options are explained, without a stack', async (t) => {
  const run = (args: string[], env: NodeJS.ProcessEnv = process.env) => spawnSync(tsx, ['tools/sign.ts', ...args], { encoding: 'utf8', env });
  const cases: [string[], RegExp][] = [
    [['--secret-file', join(dir, 'missing'), '--body', '{}'], /^sign: --secret-file \S+missing: cannot read it \(ENOENT\)$/m],
    [['--secret-file', dir, '--body', '{}'], /^sign: --secret-file \S+: cannot read it \(EISDIR\)$/m],
    [['--secret-file', secretFile, '--body-file', join(dir, 'missing.json')], /^sign: --body-file \S+missing\.json: cannot read it \(ENOENT\)$/m],
    [['--secret-env', 'LINTEL_TEST_UNSET_SECRET', '--body', '{}'], /^sign: the environment variable LINTEL_TEST_UNSET_SECRET is not set or empty$/m],
    [['--secret-file', secretFile, '--secret-env', 'X', '--body', '{}'], /^sign: give the secret once/m],
    [['--secret-file', secretFile, '--body', '{}', '--body-file', secretFile], /^sign: give the body once/m],
  ];
  for (const [args, message] of cases) {
    const r = run(args, { ...process.env, LINTEL_TEST_UNSET_SECRET: '' });
    t.equal(r.status, 2, args.join(' '));
    t.match(r.stderr, message);
    t.notMatch(r.stderr, /\n\s+at |operator-secret/, 'no stack trace, and the secret is never echoed');
    t.equal(r.stdout, '', 'no signature is printed');
  }
  const empty = join(dir, 'empty-secret');
  writeFileSync(empty, '\n');
  const r = run(['--secret-file', empty, '--body', '{}']);
  t.equal(r.status, 2);
  t.match(r.stderr, /^sign: the secret file \S+ is empty$/m);
});
