/**
 * A service as its own process, started the way `npm run <service>` starts it (`node --import tsx
 * <script>`, its composition root, configured by environment only), with its JSON log lines collected
 * from stdout. Used by the relay's process tests (test/cloud/relay/support/relay-process.ts) and the
 * pipeline test (test/e2e/support/services.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Teardown } from './stack.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** How long a process has to stop after SIGTERM at teardown before it is sent SIGKILL. */
const STOP_GRACE_MS = 10_000;

export interface ServiceProcess {
  name: string;
  child: ChildProcess;
  /** `http://127.0.0.1:{port}`, the port from its `listening` log line. */
  url: string;
  /** Its JSON log lines, parsed, as they arrive. */
  logs: Array<Record<string, unknown>>;
  /** Resolves with the first log line with this message (already seen or still to come). */
  logged(message: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Resolves with the exit code and signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface ServiceProcessOptions {
  /** For error messages. */
  name: string;
  /** The composition root, relative to the repository. */
  script: string;
  /** Added to PATH, HOME, `LOG_LEVEL=info` and `PORT=0`; nothing else of this process's environment is passed. */
  env: Record<string, string>;
  /** The log message that carries the bound `port`. */
  listening: string;
  /** Log messages awaited in turn once it listens. */
  ready?: string[];
}

/**
 * Starts the process, waits for its `listening` log line (which must carry the bound `port`), then for
 * each of `ready` in turn. At teardown, if it still runs, it is sent SIGTERM and given 10 s to stop
 * before SIGKILL.
 *
 * @example
 * const relay = await startServiceProcess(t, { name: 'relay', script: 'cloud/relay/main.ts', env, listening: 'listening' });
 */
export async function startServiceProcess(t: Teardown, options: ServiceProcessOptions): Promise<ServiceProcess> {
  const { name } = options;
  const child = spawn(process.execPath, ['--import', 'tsx', options.script], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', LOG_LEVEL: 'info', PORT: '0', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Array<Record<string, unknown>> = [];
  const listeners = new Set<() => void>();
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  createInterface({ input: child.stdout }).on('line', (line) => {
    try {
      logs.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      logs.push({ msg: line });
    }
    for (const listener of listeners) listener();
  });
  // 'close', not 'exit': at 'exit' the last lines a service wrote before it ended (`stopped`) may still
  // be in the pipe.
  let closed = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => {
      closed = true;
      for (const listener of listeners) listener();
      resolve({ code, signal });
    }),
  );
  const running = () => !closed;
  t.teardown(async () => {
    if (!running()) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    await exited;
    clearTimeout(timer);
  });

  const describe = () => `stderr: ${stderr.slice(0, 1000) || '(empty)'}; last log lines: ${JSON.stringify(logs.slice(-5))}`;
  function logged(message: string, timeoutMs = 30_000): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const line = logs.find((l) => l.msg === message);
        if (line) {
          done();
          resolve(line);
        } else if (!running()) {
          done();
          reject(new Error(`${name} exited before logging "${message}"; ${describe()}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`${name} did not log "${message}" within ${timeoutMs} ms; ${describe()}`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        listeners.delete(check);
      };
      listeners.add(check);
      check();
    });
  }

  const listening = await logged(options.listening);
  if (typeof listening.port !== 'number') throw new Error(`${name} logged "${options.listening}" without a port`);
  for (const message of options.ready ?? []) await logged(message);
  return { name, child, url: `http://127.0.0.1:${listening.port}`, logs, logged, exited };
}
