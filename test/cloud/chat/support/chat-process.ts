/**
 * The chat service as its own process (`cloud/chat/main.ts`), for what only a process shows: its
 * environment, its signals and its exit code.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { claimsOf } from './harness.js';

type Teardown = { teardown(fn: () => unknown): void };

/**
 * The service as its own process (killed at teardown if still running), with `env` over the test's
 * environment, on a port the system gives it: PORT=0, read back from its `chat listening` line. A port
 * found free and then handed to the process could be taken by another test file meanwhile, and /health
 * would then answer from that file's server. Waits until the process listens or exits; `up` is whether
 * its /health then answered (false, and `base` empty, when it exited first). `output()` is what it has
 * printed so far.
 */
export async function startChatProcess(t: Teardown, env: Record<string, string>): Promise<{ child: ChildProcess; base: string; up: boolean; output(): string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'cloud/chat/main.ts'], {
    env: { ...process.env, PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const port = await new Promise<number | undefined>((resolve) => {
    const look = () => {
      const line = /^(.*"msg":"chat listening".*)\n/m.exec(output)?.[1];
      if (line !== undefined) resolve((JSON.parse(line) as { port: number }).port);
    };
    child.stdout!.on('data', look);
    // 'close', not 'exit': what it printed before exiting has all been read by then.
    child.once('close', () => resolve(undefined));
  });
  if (port === undefined) return { child, base: '', up: false, output: () => output };
  const base = `http://127.0.0.1:${port}`;
  const up = await fetch(`${base}/health`).then((r) => r.ok, () => false);
  return { child, base, up, output: () => output };
}

/** {@link startChatProcess} with one conversation of ana's. */
export async function chatWithConversation(t: Teardown, uri: string, agentUrl: string): Promise<{ child: ChildProcess; base: string; id: string; output(): string }> {
  const { child, base, output } = await startChatProcess(t, { MONGO_URI: uri, AGENT_URL: agentUrl });
  const created = await fetch(`${base}/conversations`, { method: 'POST', headers: { 'x-gateway-claims': claimsOf('ana') } });
  const { id } = (await created.json()) as { id: string };
  return { child, base, id, output };
}
