/**
 * `ledger verify|audit|export --config FILE` reads only the file's stateDir, and a YAML alias it cannot
 * expand (one to no anchor, or an alias bomb) is a configuration problem: exit 2 with the reason. It
 * was thrown up to the generic handler, exit 1, which for verify and audit means "broken" or "a finding".
 */
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from './building-config.js';

/** Ten levels of ten aliases each: 10^10 values once expanded, in a few lines. */
const ALIAS_BOMB = `${Array.from({ length: 10 }, (_, i) => (i === 0 ? 'a0: &a0 [x, x, x, x, x, x, x, x, x, x]' : `a${i}: &a${i} [${Array(10).fill(`*a${i - 1}`).join(', ')}]`)).join('\n')}\nstateDir: state\n`;

t.test('a config whose YAML aliases cannot be expanded is bad configuration (exit 2) for every ledger action', async (t) => {
  const dir = t.testdir({ 'unresolved.yaml': 'buildingId: hq\nstateDir: *x\n', 'bomb.yaml': ALIAS_BOMB });
  const cases = [
    ['unresolved.yaml', /cannot find the state directory in .*unresolved\.yaml:\n {2}.*unresolved\.yaml: YAML: Unresolved alias/],
    ['bomb.yaml', /cannot find the state directory in .*bomb\.yaml:\n {2}.*bomb\.yaml: YAML: too many alias expansions \(more than 100\)/],
  ] as const;
  for (const [file, message] of cases) {
    for (const action of ['verify', 'audit', 'export']) {
      const { code, stdout, stderr } = await runCli(['ledger', action, '--config', join(dir, file)]);
      t.equal(code, 2, `ledger ${action} --config ${file}: ${stderr}`);
      t.match(stderr, message, `ledger ${action} --config ${file}`);
      t.equal(stdout, '', 'no report: the ledger was never opened');
    }
  }
});

t.test('an alias that does resolve still names the state directory', async (t) => {
  const dir = t.testdir({});
  writeFileSync(join(dir, 'config.yaml'), 'buildingId: hq\npaths: { state: &state elsewhere }\nstateDir: *state\n');
  const { code, stderr } = await runCli(['ledger', 'verify', '--config', join(dir, 'config.yaml')]);
  t.equal(code, 2, 'no ledger there yet');
  t.match(stderr, new RegExp(`no ledger at ${join(dir, 'elsewhere', 'ledger.sqlite').replace(/[.]/g, '\\.')}`), 'the aliased stateDir is the one looked in');
});
