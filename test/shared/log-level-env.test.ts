/**
 * A misspelt LOG_LEVEL is a configuration problem like any other: every service names it on stderr and
 * exits 2 before it starts anything, instead of crashing inside the logger with a stack trace.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SERVICES = ['relay', 'chat', 'tenancy', 'registry', 'notification', 'telemetry'] as const;
/** Required variables left unset in these runs that a service names beside LOG_LEVEL: it reads them all at once. */
const ALSO_NAMED: Partial<Record<(typeof SERVICES)[number], string[]>> = {
  tenancy: ['DATABASE_URL', 'INTERNAL_SIGNING_SECRET'],
  registry: ['DATABASE_URL', 'INTERNAL_SIGNING_SECRET'],
};

function run(service: string, env: Record<string, string>): Promise<{ code: number | null; stderr: string; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', `cloud/${service}/main.ts`], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    // 'close', not 'exit': the last of stderr may still be in the pipe at 'exit'.
    child.once('close', (code) => resolve({ code, stderr, stdout }));
  });
}

for (const service of SERVICES) {
  t.test(`${service}: LOG_LEVEL=verbose is named as a configuration problem, exit 2`, async (t) => {
    const { code, stderr, stdout } = await run(service, { LOG_LEVEL: 'verbose' });
    t.equal(code, 2);
    t.match(stderr, 'LOG_LEVEL: expected one of fatal, error, warn, info, debug, trace, silent, got "verbose"');
    for (const name of ALSO_NAMED[service] ?? []) t.match(stderr, `${name}: required but not set`, `${name} is named with it, not on a second start`);
    t.notMatch(stderr, /\n\s+at /, 'no stack trace');
    t.equal(stdout, '', 'nothing started, nothing logged');
  });
}
