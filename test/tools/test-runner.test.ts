/**
 * tools/test, the README's test command: its last line counts the tap results, and a test file that
 * runs no test is a failure, not a silent pass. Runs the real script on fixture files, against the
 * stack already up (tools/test brings it up first; that is a no-op here). The file is serial (the tap
 * section of package.json): the inner tap clears .tap/processinfo, which the processes of a test file
 * running beside it write into as they exit.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { Teardown } from '../support/stack.js';

interface Run {
  lastLine: string;
  status: number | null;
  /** tap's closing `# { total: … }` line, which tools/test counts from. */
  summary: string | undefined;
  /** What the run printed last, stderr (tools/stack's log) included: names the cause when a check fails. */
  tail: string;
}

/** The environment without the outer run's TAP_* variables: with TAP_CHILD_ID set, tap prints no summary. */
function withoutTapVariables(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !/^TAP(_|$)/.test(name)));
}

function runTests(t: Teardown, ...files: string[]): Run {
  const dir = mkdtempSync(join(tmpdir(), 'lintel-test-runner-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const output = join(dir, 'tap-output.txt');
  const result = spawnSync('bash', ['tools/test', ...files], {
    encoding: 'utf8',
    env: { ...withoutTapVariables(process.env), LINTEL_TAP_OUTPUT: output },
  });
  const lines = result.stdout.trimEnd().split('\n');
  const stderr = result.stderr.trimEnd().split('\n');
  return {
    lastLine: lines[lines.length - 1] ?? '',
    status: result.status,
    summary: readFileSync(output, 'utf8')
      .split('\n')
      .find((line) => line.startsWith('# { total:')),
    tail: `${lines.slice(-12).join('\n')}\n--- stderr ---\n${stderr.slice(-12).join('\n')}`,
  };
}

t.test('a passing file is counted, and the run exits 0', async (t) => {
  const run = runTests(t, 'test/tools/fixtures/one-pass.fixture.ts');
  t.equal(run.lastLine, '1 passed, 0 failed', run.tail);
  t.equal(run.status, 0, run.tail);
  t.match(run.summary, /^# \{ total: 1, pass: 1 /, 'counted from the summary tap printed');
});

t.test('a file that runs no test is counted failed, and the run exits non-zero', async (t) => {
  const run = runTests(t, 'test/tools/fixtures/one-pass.fixture.ts', 'test/tools/fixtures/no-tests.fixture.ts');
  t.equal(run.lastLine, '1 passed, 1 failed', run.tail);
  t.not(run.status, 0, run.tail);
  t.match(run.summary, /skip: 1/, 'the file with no tests is a skip in the summary');
});

t.test('a file killed after a passing assertion is counted failed, beside other failures too', async (t) => {
  // tap's summary leaves the killed file out; with other files failing, the exit status alone no longer
  // shows it. A file that ends before any test is in the summary already, and is not counted again.
  const run = runTests(t, 'test/tools/fixtures/three-fail.fixture.ts', 'test/tools/fixtures/killed-after-a-pass.fixture.ts', 'test/tools/fixtures/exit-early.fixture.ts');
  t.match(run.summary, /pass: 1, fail: 4\b/, 'the summary counts the three failing assertions and the early exit');
  t.equal(run.lastLine, '1 passed, 5 failed', run.tail);
  t.not(run.status, 0, run.tail);
});

t.test('a file that fails by its exit status after its plan is counted failed once', async (t) => {
  // tap counts it (its plan was printed, its assertions passed): it is not a file killed mid-way too.
  const run = runTests(t, 'test/tools/fixtures/one-pass.fixture.ts', 'test/tools/fixtures/exit-after-plan.fixture.ts');
  t.match(run.summary, /pass: 2, fail: 1\b/, 'the summary counts the file once');
  t.equal(run.lastLine, '2 passed, 1 failed', run.tail);
  t.not(run.status, 0, run.tail);
});
