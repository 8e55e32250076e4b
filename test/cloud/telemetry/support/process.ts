/**
 * Runs a TypeScript entry point of the repository as its own process (through tsx), as an operator
 * would, and collects its exit code and output.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

export interface RunningScript {
  child: ChildProcess;
  exited: Promise<number | null>;
  out(): string;
  err(): string;
}

/** Starts `script` (relative to the repository root) with only PATH and `env` in its environment. */
export function runScript(script: string, args: string[], env: Record<string, string>): RunningScript {
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  // 'close', not 'exit': the last output may still be in the pipes at 'exit'.
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { child, exited, out: () => stdout, err: () => stderr };
}

/** The port the telemetry service logs once it listens; undefined if it does not within 30 s. */
export async function listeningPort(service: RunningScript): Promise<number | undefined> {
  const deadline = Date.now() + 30_000;
  let port: number | undefined;
  while (!port && Date.now() < deadline) {
    port = Number(/"port":(\d+)[^\n]*telemetry listening/.exec(service.out())?.[1]) || undefined;
    if (!port) await new Promise((r) => setTimeout(r, 50));
  }
  return port;
}
