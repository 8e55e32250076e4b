import t from 'tap';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

const FIXTURE = fileURLToPath(new URL('./fixtures/stop-on-stdin.ts', import.meta.url));

// `npm start` in a terminal delivers Ctrl-C twice: the terminal signals the whole process group, and npm
// forwards the signal to its child as well. The second one must not cut the stop short.
t.test('a second SIGINT or SIGTERM while stopping does not kill the process: the stop finishes and exits 0', async (t) => {
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE], { stdio: ['pipe', 'pipe', 'inherit'] });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  let stdout = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    stdout += chunk;
  });
  /** Resolves once stdout holds `text`; fails if the child exits first. */
  const printed = (text: string) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (!stdout.includes(text)) return;
        child.stdout.off('data', check);
        resolve();
      };
      child.stdout.on('data', check);
      child.once('exit', (code, signal) => reject(new Error(`exited (${code ?? signal}) before printing ${JSON.stringify(text)}: ${stdout}`)));
      check();
    });
  const messages = () => stdout.split('\n').filter((line) => line.startsWith('{')).map((line) => (JSON.parse(line) as { msg: string }).msg);

  await printed('ready\n');
  child.kill('SIGINT');
  await printed('"msg":"stopping"');
  child.kill('SIGINT');
  await printed('"signal":"SIGINT","msg":"already stopping');
  child.kill('SIGTERM');
  await printed('"signal":"SIGTERM","msg":"already stopping');
  child.stdin.write('go\n');
  const [code, signal] = await exited;
  t.same({ code, signal }, { code: 0, signal: null }, 'the stop finished');
  t.match(stdout, /stop finished\n/);
  t.same(messages(), ['stopping', 'already stopping; the stop continues', 'already stopping; the stop continues', 'stopped']);
});

t.test('a signal during start stops the service cleanly: the start it cut short is not a start failure', async (t) => {
  const fixture = fileURLToPath(new URL('./fixtures/signal-during-start.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', fixture], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  let stdout = '';
  child.stdout.setEncoding('utf8');
  const starting = new Promise<void>((resolve) => {
    child.stdout.on('data', (chunk: string) => {
      stdout += chunk;
      if (stdout.includes('starting\n')) resolve();
    });
  });
  await starting;
  child.kill('SIGTERM');
  const [code, signal] = await exited;
  t.same({ code, signal }, { code: 0, signal: null }, 'exit 0, as for any stop');
  const messages = stdout.split('\n').filter((line) => line.startsWith('{')).map((line) => (JSON.parse(line) as { msg: string }).msg);
  t.notOk(messages.includes('failed to start'), 'no start failure is reported');
  t.ok(messages.includes('start cut short by the stop'), 'the cut-short start is logged as such');
  t.equal(messages.at(-1), 'stopped');
});
