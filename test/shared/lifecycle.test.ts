import t from 'tap';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

const FIXTURE = fileURLToPath(new URL('./fixtures/stop-that-hangs.ts', import.meta.url));

t.test('a stop that never finishes exits 1 at the deadline, even when nothing else keeps the process alive', async (t) => {
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE], { env: { ...process.env, DEADLINE_MS: '500' }, stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  let stdout = '';
  child.stdout.setEncoding('utf8');
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: string) => {
      stdout += chunk;
      if (stdout.includes('ready\n')) resolve();
    });
    child.once('exit', () => reject(new Error(`exited before it was ready: ${stdout}`)));
  });
  child.kill('SIGTERM');
  const [code, signal] = await exited;
  t.same({ code, signal }, { code: 1, signal: null }, 'exit code 1: the stop did not complete');
  const messages = stdout.split('\n').filter((line) => line.startsWith('{')).map((line) => (JSON.parse(line) as { msg: string }).msg);
  t.same(messages, ['stopping', 'stop took too long; exiting']);
});
