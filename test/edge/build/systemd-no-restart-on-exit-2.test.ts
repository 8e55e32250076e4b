/**
 * The unit restarts the collector after a failure a restart may cure (exit 1, a crash), but not after
 * exit 2, an invalid config or a state it cannot open: that would fail again every RestartSec, forever.
 */
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { unitDirectives } from './unit-file.js';
import { runCli } from '../cli/building-config.js';

const directives = unitDirectives();
const value = (key: string) => directives.get(key)?.at(-1);

t.test('Restart=on-failure, except for exit 2', async (t) => {
  t.equal(value('Restart'), 'on-failure');
  t.ok((value('RestartPreventExitStatus') ?? '').split(/\s+/).includes('2'), 'RestartPreventExitStatus lists 2');
  t.notOk((value('RestartPreventExitStatus') ?? '').split(/\s+/).includes('1'), 'exit 1 is still restarted');
});

t.test('the collector exits 2 for an invalid config', async (t) => {
  const config = join(t.testdir({}), 'config.yaml');
  writeFileSync(config, 'buildingId: ""\n', { mode: 0o600 });
  const { code, stderr } = await runCli(['run', '--config', config]);
  t.equal(code, 2);
  t.match(stderr, /buildingId/);
});
