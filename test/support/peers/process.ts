/**
 * Running a peer daemon in the foreground for a test: wait until it says it is ready, stop it by its pid.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';

export interface PeerProcess {
  child: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far (for failure messages). */
  output(): string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the process has exited. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Spawns `command` and resolves once `isReady()` answers true (polled every 25 ms) or rejects when the
 * process exits first or `timeoutMs` passes, with what it printed.
 */
export async function startPeer(
  command: string,
  args: string[],
  options: SpawnOptions & { isReady: (output: string) => boolean | Promise<boolean>; timeoutMs?: number; name: string },
): Promise<PeerProcess> {
  const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  let spawnError: Error | undefined;
  child.once('error', (error) => (spawnError = error));

  const peer: PeerProcess = {
    child,
    output: () => output,
    async stop(graceMs = 3000) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        await exited;
        clearTimeout(timer);
      }
    },
  };

  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  for (;;) {
    if (spawnError) throw new Error(`${options.name} did not start: ${spawnError.message}`);
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${options.name} exited (${child.exitCode ?? child.signalCode}) before it was ready:\n${output}`);
    }
    if (await options.isReady(output)) return peer;
    if (Date.now() > deadline) {
      await peer.stop();
      throw new Error(`${options.name} was not ready within ${options.timeoutMs ?? 10_000} ms:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
