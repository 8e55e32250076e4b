/**
 * The relay as a separate process, started the way `npm run relay` starts it (tsx cloud/relay/main.ts),
 * with its JSON log lines collected from stdout.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Teardown } from './relay-harness.js';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

export interface RelayProcess {
  child: ChildProcess;
  url: string;
  logs: Array<Record<string, unknown>>;
  /** Resolves with the first log line with this message (already seen or still to come). */
  logged(message: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Resolves with the exit code and signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts a relay process and waits until it listens and its broker subscription is live. */
export async function startRelayProcess(t: Teardown, env: Record<string, string>, options: { waitForBroker?: boolean } = {}): Promise<RelayProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'cloud/relay/main.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Array<Record<string, unknown>> = [];
  const listeners = new Set<() => void>();
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  createInterface({ input: child.stdout! }).on('line', (line) => {
    try {
      logs.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      logs.push({ msg: line });
    }
    for (const listener of listeners) listener();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      for (const listener of listeners) listener();
      resolve({ code, signal });
    }),
  );
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  });

  function logged(message: string, timeoutMs = 20_000): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const line = logs.find((l) => l.msg === message);
        if (line) {
          done();
          resolve(line);
        } else if (child.exitCode !== null || child.signalCode !== null) {
          done();
          reject(new Error(`relay exited before logging "${message}": ${stderr.slice(0, 500)}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`relay did not log "${message}" within ${timeoutMs} ms`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        listeners.delete(check);
      };
      listeners.add(check);
      check();
    });
  }

  const listening = await logged('listening');
  if (options.waitForBroker !== false) await logged('broker subscribed');
  return { child, url: `http://127.0.0.1:${String(listening.port)}`, logs, logged, exited };
}
