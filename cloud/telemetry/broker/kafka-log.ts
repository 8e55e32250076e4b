/**
 * Routes kafkajs's own log lines into the service's pino logger (warnings and errors only), so an
 * outage is one readable line per attempt rather than console noise.
 */
import '../../../shared/kafkajs-idle-loop.js';
import { logLevel, type logCreator } from 'kafkajs';
import type { Logger } from 'pino';

export function kafkaLogCreator(logger: Logger): logCreator {
  const kafkaLogger = logger.child({ component: 'kafkajs' });
  return () => ({ level, log }) => {
    const { message, broker, error } = log as { message?: string; broker?: string; error?: string };
    if (level === logLevel.ERROR) kafkaLogger.error({ broker, error }, message ?? 'kafka error');
    else if (level === logLevel.WARN) kafkaLogger.warn({ broker, error }, message ?? 'kafka warning');
  };
}
