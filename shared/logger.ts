/**
 * JSON logs with pino. The claims header, signatures and every secret-looking key are redacted.
 */
import pino, { type Logger, type LoggerOptions, type DestinationStream } from 'pino';

export type { Logger };

/** Paths pino blanks out wherever they appear in a log object. */
export const REDACTED_PATHS = [
  'claims',
  'claimsHeader',
  'headers["x-gateway-claims"]',
  'headers["x-signature"]',
  'headers.authorization',
  'headers.cookie',
  'req.headers["x-gateway-claims"]',
  'req.headers["x-signature"]',
  'req.headers.authorization',
  'req.headers.cookie',
  '*.password',
  '*.secret',
  '*.privateKey',
  '*.signingSecret',
  '*.apiKey',
  '*.token',
  'password',
  'secret',
  'privateKey',
  'signingSecret',
  'token',
  'vapidPrivateKey',
  'mac',
  'macs',
];

/**
 * A logger for one service or tool.
 *
 * @example
 * const logger = createLogger('telemetry', { level: process.env.LOG_LEVEL });
 * logger.info({ port }, 'listening');
 */
export function createLogger(
  name: string,
  options: { level?: string | undefined; destination?: DestinationStream } = {},
): Logger {
  const config: LoggerOptions = {
    name,
    level: options.level ?? 'info',
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    base: { service: name },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return options.destination ? pino(config, options.destination) : pino(config);
}

/** A logger that writes nothing, for tests that do not inspect logs. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
