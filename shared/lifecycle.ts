/**
 * Process lifecycle for a composition root: stop cleanly on SIGTERM or SIGINT, within a deadline.
 */
import type { Server } from 'node:http';
import type { Server as NetServer } from 'node:net';
import type { Logger } from 'pino';
import { describeError } from './describe-error.js';
import { ConfigError } from './env.js';

/** Anything with an async start and a stop that undoes it. */
export interface Lifecycle {
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts a service and stops it on SIGTERM/SIGINT. A stop that takes longer than `deadlineMs` exits 1.
 * Signals that arrive while stopping are logged and otherwise ignored; a signal during start stops the
 * service, and the start it cuts short is not a start failure. A {@link ConfigError} at start prints
 * every problem and exits 2.
 *
 * @example
 * await runUntilSignal(service, logger);
 */
export async function runUntilSignal(service: Lifecycle, logger: Logger, deadlineMs = 5000): Promise<void> {
  let stopping = false;
  const stop = async (signal: string) => {
    // A second signal is common and must not cut the stop short: `npm start` delivers one Ctrl-C twice
    // (the terminal signals the process group and npm forwards it), and an operator may press it again.
    // The listeners stay, so the signal's default action (killing the process at once) never applies;
    // the deadline below is what ends a stop that hangs.
    if (stopping) {
      logger.warn({ signal }, 'already stopping; the stop continues');
      return;
    }
    stopping = true;
    logger.info({ signal }, 'stopping');
    // Not unref'd: a stop stuck on a promise nothing will settle would otherwise let the emptied event
    // loop end the process with 0, as if it had stopped.
    setTimeout(() => {
      logger.error({ deadlineMs }, 'stop took too long; exiting');
      process.exit(1);
    }, deadlineMs);
    try {
      await service.stop();
      logger.info('stopped');
      process.exit(0);
    } catch (err) {
      logger.error({ error: describeError(err) }, 'stop failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  try {
    await service.start();
  } catch (err) {
    // A signal during start stops the service under it (a pool ended while start still waited on it):
    // that start failing is the stop's doing, and the stop, already under way, decides the exit.
    if (stopping) {
      logger.info({ error: describeError(err) }, 'start cut short by the stop');
      return;
    }
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}

/**
 * {@link runUntilSignal}, with a start that fails logged as fatal, the service stopped (whatever it had
 * opened is closed) and the process ended with 1.
 *
 * @example
 * runOrExit(service, logger);
 */
export function runOrExit(service: Lifecycle, logger: Logger): void {
  runUntilSignal(service, logger).catch(async (err: unknown) => {
    logger.fatal({ error: describeError(err) }, 'start failed');
    await service.stop().catch(() => undefined);
    process.exit(1);
  });
}

/**
 * The configuration `read` gives, or exits 2 with every problem listed when it throws a ConfigError.
 *
 * @example
 * const config = configOrExit(() => readEnv(SPEC));
 */
export function configOrExit<T>(read: () => T): T {
  try {
    return read();
  } catch (err) {
    exitOnConfigError(err);
  }
}

/** Exits with a readable message when configuration is invalid (every problem listed). */
export function exitOnConfigError(err: unknown): never {
  if (err instanceof ConfigError) {
    process.stderr.write(`${err.message}\n`);
    process.exit(2);
  }
  throw err;
}

/** Listens and resolves with the bound port (use port 0 in tests). */
export function listen(server: NetServer, port: number, host?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : port);
    });
  });
}

/** Closes a server, dropping idle keep-alive connections so close does not hang. */
export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) {
      resolve();
      return;
    }
    server.close(() => resolve());
    server.closeIdleConnections?.();
    setTimeout(() => server.closeAllConnections?.(), 2000).unref();
  });
}

/**
 * Waits for `work` at most `ms` (forever when not finite). True when it settled in time, whether it
 * resolved or rejected; the work itself goes on either way.
 *
 * @example
 * if (!(await settlesWithin(consumer.stop(), 2000))) logger.warn('consumer still stopping');
 */
export async function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  const settled = work.then(
    () => true,
    () => true,
  );
  if (!Number.isFinite(ms)) return settled;
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), Math.max(0, ms))));
  try {
    return await Promise.race([settled, expired]);
  } finally {
    clearTimeout(timer);
  }
}
