/**
 * The chat service as its own process (`cloud/chat/main.ts`), for what only a process shows: its
 * environment, its signals and its exit code.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import { listen } from '../../../../shared/lifecycle.js';
import { claimsOf } from './harness.js';

type Teardown = { teardown(fn: () => unknown): void };

export async function freePort(): Promise<number> {
  const server = createServer();
  const port = await listen(server, 0, '127.0.0.1');
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * The service as its own process (killed at teardown if still running) on a free port, with `env` over
 * the test's environment; waits until /health answers or the process exits. `output()` is what it has
 * printed so far.
 */
export async function startChatProcess(t: Teardown, env: Record<string, string>): Promise<{ child: ChildProcess; base: string; up: boolean; output(): string }> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'cloud/chat/main.ts'], {
    env: { ...process.env, PORT: String(port), LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const base = `http://127.0.0.1:${port}`;
  let up = false;
  for (let i = 0; i < 300 && !up && child.exitCode === null; i++) {
    up = await fetch(`${base}/health`).then((r) => r.ok, () => false);
    if (!up) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { child, base, up, output: () => output };
}

/** {@link startChatProcess} with one conversation of ana's. */
export async function chatWithConversation(t: Teardown, uri: string, agentUrl: string): Promise<{ child: ChildProcess; base: string; id: string; output(): string }> {
  const { child, base, output } = await startChatProcess(t, { MONGO_URI: uri, AGENT_URL: agentUrl });
  const created = await fetch(`${base}/conversations`, { method: 'POST', headers: { 'x-gateway-claims': claimsOf('ana') } });
  const { id } = (await created.json()) as { id: string };
  return { child, base, id, output };
}
