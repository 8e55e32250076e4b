/**
 * JSON logs with pino. The claims header, signatures and every secret-looking key are redacted.
 */
import pino, { type Logger, type LoggerOptions, type DestinationStream } from 'pino';

export type { Logger };

/**
 * Keys whose values are secrets wherever they appear, at the top of a log object or one level down
 * (`{ config: { INTERNAL_SIGNING_SECRET } }`). The env names cover a service that logs its config;
 * the URLs among them may carry a password.
 */
const SECRET_KEYS = [
  'claims',
  'claimsHeader',
  'password',
  'secret',
  'privateKey',
  'signingSecret',
  'apiKey',
  'token',
  'authorization',
  'cookie',
  'vapidPrivateKey',
  'mac',
  'macs',
  'INTERNAL_SIGNING_SECRET',
  'INGEST_SIGNING_SECRET',
  'VAPID_PRIVATE_KEY',
  'DATABASE_URL',
  'REDIS_URL',
  'MONGO_URI',
];

/** Paths pino blanks out wherever they appear in a log object. */
export const REDACTED_PATHS = [
  'headers["x-gateway-claims"]',
  'headers["x-signature"]',
  'headers.authorization',
  'headers.cookie',
  'req.headers["x-gateway-claims"]',
  'req.headers["x-signature"]',
  'req.headers.authorization',
  'req.headers.cookie',
  ...SECRET_KEYS,
  ...SECRET_KEYS.map((key) => `*.${key}`),
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
