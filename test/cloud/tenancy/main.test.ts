import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { request } from 'undici';
import { encodeClaims } from '../../../shared/claims.js';
import { sign } from '../../../shared/hmac.js';
import { freshPgDatabase } from '../../support/stack.js';

const MAIN = fileURLToPath(new URL('../../../cloud/tenancy/main.ts', import.meta.url));

/**
 * A loopback port nothing listens on, so connections are refused: the discard port, a fixed port below
 * 1024 that neither the stack nor any test binds. A port bound and then closed would not do: another
 * test file running meanwhile may be given it.
 */
const REFUSING_PORT = 9;

interface Run {
  code: Promise<number | null>;
  /** Resolves with the first match of `pattern` in what the process printed to stdout; rejects if it exits first. */
  printed(pattern: RegExp): Promise<RegExpMatchArray>;
  stderr: () => string;
  stdout: () => string;
  signal(name: NodeJS.Signals): void;
}

/** Runs `npm run tenancy`'s command with exactly the given environment (nothing inherited but PATH/HOME). */
function runMain(t: { teardown(fn: () => unknown): void }, env: Record<string, string>): Run {
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN], { env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let stdout = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  const code = new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  const printed = (pattern: RegExp) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const look = () => {
        const match = pattern.exec(stdout);
        if (!match) return;
        child.stdout.off('data', look);
        resolve(match);
      };
      child.stdout.on('data', look);
      look();
      void code.then((c) => reject(new Error(`tenancy exited (${c}) before printing ${pattern}: ${stdout}${stderr}`)));
    });
  t.teardown(async () => {
    if (child.exitCode === null) child.kill('SIGKILL');
    await code;
  });
  return { code, printed, stderr: () => stderr, stdout: () => stdout, signal: (s) => child.kill(s) };
}

t.test('refuses to start without its required variables, naming each', async (t) => {
  const run = runMain(t, {});
  t.equal(await run.code, 2);
  t.match(run.stderr(), /DATABASE_URL: required but not set/);
  t.match(run.stderr(), /INTERNAL_SIGNING_SECRET: required but not set/);
  t.notMatch(run.stderr(), /REDIS_URL/, 'REDIS_URL is optional');
  t.notMatch(run.stderr(), /ADDR/, 'ADDR has a default');
  t.notMatch(run.stderr(), /\n\s+at /, 'no stack trace');
});

t.test('names every malformed variable at once', async (t) => {
  const run = runMain(t, { DATABASE_URL: 'mysql://x/y', INTERNAL_SIGNING_SECRET: 's', REDIS_URL: 'http://127.0.0.1', ADDR: 'nope' });
  t.equal(await run.code, 2);
  t.match(run.stderr(), /DATABASE_URL: not a postgres:\/\/ or postgresql:\/\/ URL/);
  t.match(run.stderr(), /REDIS_URL: not a redis:\/\/ or rediss:\/\/ URL/);
  t.match(run.stderr(), /ADDR: expected \[host\]:port/);
  t.match(run.stderr(), /INTERNAL_SIGNING_SECRET: every secret must be at least 16 characters; 1 of 1 are shorter/, 'a guessable secret is refused');
  t.notMatch(run.stderr(), /INTERNAL_SIGNING_SECRET: s\b/, 'the secret is not echoed');
  const blank = runMain(t, { DATABASE_URL: 'postgres://127.0.0.1/x', INTERNAL_SIGNING_SECRET: ' , ' });
  t.equal(await blank.code, 2);
  t.match(blank.stderr(), /INTERNAL_SIGNING_SECRET: expected at least one non-empty secret/);
});

/**
 * The address of a tenancy started on port 0, from its `listening` log line: the port the system gave
 * it, so never another test's server. Logged once the server listens.
 */
async function listeningBase(run: Run): Promise<string> {
  const [, line = ''] = await run.printed(/^(.*"msg":"listening".*)\n/m);
  const { port } = JSON.parse(line) as { port?: unknown };
  if (typeof port !== 'number') throw new Error(`no port in the listening line: ${line}`);
  return `http://127.0.0.1:${port}`;
}

/** Creates the domain `acme` owned by `owner`; answers the status. */
async function createAcme(base: string, owner: string): Promise<number> {
  const created = await request(`${base}/domains`, {
    method: 'POST',
    headers: { 'x-gateway-claims': encodeClaims({ sub: owner }), 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'acme', displayName: 'Acme' }),
  });
  await created.body.dump();
  return created.statusCode;
}

t.test('starts with Redis unreachable, migrates, serves, accepts the previous key, and stops on SIGTERM', async (t) => {
  const databaseUrl = await freshPgDatabase(t);
  const run = runMain(t, {
    DATABASE_URL: databaseUrl,
    INTERNAL_SIGNING_SECRET: 'tenancy-new-secret, tenancy-old-secret',
    REDIS_URL: `redis://127.0.0.1:${REFUSING_PORT}`,
    ADDR: '127.0.0.1:0',
  });
  const base = await listeningBase(run);
  const owner = '5d0c0000-0000-4000-8000-0000000000aa';
  t.equal(await createAcme(base, owner), 201);
  const login = await request(`${base}/internal/memberships?accountId=${owner}`, { headers: { 'x-signature': sign('', 'tenancy-old-secret') } });
  t.equal(login.statusCode, 200, 'the previous secret of the ring is accepted');
  t.match(await login.body.json(), [{ domainName: 'acme', role: 'business_admin' }]);
  run.signal('SIGTERM');
  t.equal(await run.code, 0, 'clean exit on SIGTERM');
  t.match(run.stdout(), /"msg":"migrations applied"/);
  t.match(run.stdout(), /"msg":"account-deleted consumer started"/);
  t.notMatch(run.stdout() + run.stderr(), /new-secret|old-secret/, 'secrets never logged');
});

t.test('without REDIS_URL the account-deleted consumer never starts, and every route is served', async (t) => {
  const run = runMain(t, { DATABASE_URL: await freshPgDatabase(t), INTERNAL_SIGNING_SECRET: 'tenancy-only-secret', ADDR: '127.0.0.1:0' });
  const base = await listeningBase(run);
  const owner = '5d0c0000-0000-4000-8000-0000000000bb';
  t.equal(await createAcme(base, owner), 201);
  const login = await request(`${base}/internal/memberships?accountId=${owner}`, { headers: { 'x-signature': sign('', 'tenancy-only-secret') } });
  t.match(await login.body.json(), [{ domainName: 'acme', role: 'business_admin' }]);
  run.signal('SIGTERM');
  t.equal(await run.code, 0, 'clean exit on SIGTERM');
  t.match(run.stdout(), /"msg":"REDIS_URL not set; account-deleted consumer not started"/);
  t.notMatch(run.stdout(), /"msg":"account-deleted consumer started"/);
});

t.test('PostgreSQL unreachable at start: one line naming it and where it was looked for, without the password, exit 1', async (t) => {
  const closed = REFUSING_PORT;
  const run = runMain(t, { DATABASE_URL: `postgres://lintel:hunter2@127.0.0.1:${closed}/tenancy_db`, INTERNAL_SIGNING_SECRET: 'tenancy-test-secret' });
  t.equal(await run.code, 1);
  const fatal = run.stdout().split('\n').find((l) => l.includes('"start failed"'));
  t.ok(fatal, `a start failure line: ${run.stdout()}`);
  t.match(JSON.parse(fatal ?? '{}'), { level: 60, error: `DependencyUnreachable: cannot reach PostgreSQL at 127.0.0.1:${closed}/tenancy_db: Error (ECONNREFUSED)` });
  t.notMatch(run.stdout() + run.stderr(), /hunter2/, 'the password is not printed');
  t.notMatch(run.stderr(), /\n\s+at /, 'no stack trace');
});
