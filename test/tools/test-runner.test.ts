/**
 * tools/test, the README's test command: its last line counts the tap results, and a test file that
 * runs no test is a failure, not a silent pass. Runs the real script on fixture files, against the
 * stack already up (tools/test brings it up first; that is a no-op here).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { Teardown } from '../support/stack.js';

function runTests(t: Teardown, ...files: string[]): { lastLine: string; status: number | null; tail: string } {
  const dir = mkdtempSync(join(tmpdir(), 'lintel-test-runner-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const result = spawnSync('bash', ['tools/test', ...files], {
    encoding: 'utf8',
    env: { ...process.env, LINTEL_TAP_OUTPUT: join(dir, 'tap-output.txt') },
  });
  const lines = result.stdout.trimEnd().split('\n');
  // What the run printed last, stderr (tools/stack's log) included, names the cause when a check fails.
  const tail = `${lines.slice(-12).join('\n')}\n--- stderr ---\n${result.stderr.trimEnd().split('\n').slice(-12).join('\n')}`;
  return { lastLine: lines[lines.length - 1] ?? '', status: result.status, tail };
}

t.test('a passing file is counted, and the run exits 0', async (t) => {
  const run = runTests(t, 'test/tools/fixtures/one-pass.fixture.ts');
  t.equal(run.lastLine, '1 passed, 0 failed', run.tail);
  t.equal(run.status, 0, run.tail);
});

t.test('a file that runs no test is counted failed, and the run exits non-zero', async (t) => {
  const run = runTests(t, 'test/tools/fixtures/one-pass.fixture.ts', 'test/tools/fixtures/no-tests.fixture.ts');
  t.equal(run.lastLine, '1 passed, 1 failed', run.tail);
  t.not(run.status, 0, run.tail);
});
