import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { request } from 'undici';
import { sign } from '../../../shared/hmac.js';
import { freshPgDatabase } from '../../support/stack.js';
import { eventually, freePort } from '../tenancy/support/redis.js';

const MAIN = fileURLToPath(new URL('../../../cloud/registry/main.ts', import.meta.url));

function runMain(t: { teardown(fn: () => unknown): void }, env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN], { env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let stdout = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  const code = new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  t.teardown(async () => {
    if (child.exitCode === null) child.kill('SIGKILL');
    await code;
  });
  return { code, stderr: () => stderr, stdout: () => stdout, signal: (s: NodeJS.Signals) => child.kill(s) };
}

t.test('refuses to start without its required variables, naming each', async (t) => {
  const run = runMain(t, {});
  t.equal(await run.code, 2);
  t.match(run.stderr(), /DATABASE_URL: required but not set/);
  t.match(run.stderr(), /INTERNAL_SIGNING_SECRET: required but not set/);
  t.notMatch(run.stderr(), /ADDR/);
  const partial = runMain(t, { DATABASE_URL: 'postgres://127.0.0.1/x', ADDR: ':99999' });
  t.equal(await partial.code, 2);
  t.match(partial.stderr(), /INTERNAL_SIGNING_SECRET: required but not set/);
  t.match(partial.stderr(), /ADDR: expected \[host\]:port, got ":99999"/);
  t.notMatch(partial.stderr(), /DATABASE_URL/);
});

t.test('starts, migrates, serves signup and the signed routes, and stops on SIGTERM', async (t) => {
  const port = await freePort();
  const run = runMain(t, { DATABASE_URL: await freshPgDatabase(t), INTERNAL_SIGNING_SECRET: 'provisioner-secret', ADDR: `127.0.0.1:${port}` });
  const base = `http://127.0.0.1:${port}`;
  await eventually(async () => {
    try {
      return (await request(`${base}/health`)).statusCode === 200;
    } catch {
      return false;
    }
  }, 'registry listening', 30_000);
  const created = await request(`${base}/organizations`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ Name: 'acme', Tier: 'pooled' }) });
  t.equal(created.statusCode, 201);
  await created.body.dump();
  const pending = await request(`${base}/internal/organizations/pending`, { headers: { 'x-signature': sign('', 'provisioner-secret') } });
  t.match(await pending.body.json(), [{ Name: 'acme', Status: 'provisioning' }]);
  run.signal('SIGTERM');
  t.equal(await run.code, 0);
  t.match(run.stdout(), /"msg":"migrations applied"/);
  t.notMatch(run.stdout() + run.stderr(), /provisioner-secret/);
});

t.test('PostgreSQL unreachable at start: one line naming it and where it was looked for, without the password, exit 1', async (t) => {
  const closed = await freePort();
  const run = runMain(t, { DATABASE_URL: `postgres://lintel:hunter2@127.0.0.1:${closed}/registry_db`, INTERNAL_SIGNING_SECRET: 'registry-test-secret' });
  t.equal(await run.code, 1);
  const fatal = run.stdout().split('\n').find((l) => l.includes('"start failed"'));
  t.ok(fatal, `a start failure line: ${run.stdout()}`);
  t.match(JSON.parse(fatal ?? '{}'), { level: 60, error: `DependencyUnreachable: cannot reach PostgreSQL at 127.0.0.1:${closed}/registry_db: Error (ECONNREFUSED)` });
  t.notMatch(run.stdout() + run.stderr(), /hunter2/, 'the password is not printed');
  t.notMatch(run.stderr(), /\n\s+at /, 'no stack trace');
});
