/**
 * JSON logs with pino. The claims header, signatures, cookies and every secret-named key are redacted
 * at any depth, and an error object is logged as its class and code only.
 */
import pino, { type Logger, type DestinationStream } from 'pino';
import { describeError } from './describe-error.js';

export type { Logger };

/**
 * Parts of a key, compared in lower case without `-` and `_`, that name a secret: `Authorization`,
 * `x-gateway-claims`, `X-Signature`, `Set-Cookie`, `clientSecret`, `INTERNAL_SIGNING_SECRET`,
 * `private_key`, `api-key`, `refresh_token`…
 */
const SECRET_KEY = /secret|passw|privatekey|apikey|authorization|cookie|claims|signature|token$/;

/** Whole keys that name a secret: device MAC addresses, and connection URLs that may carry a password. */
const SECRET_NAMES = new Set(['mac', 'macs', 'databaseurl', 'redisurl', 'mongouri']);

/** What a redacted value is logged as. */
export const REDACTED = '[redacted]';

function isSecretKey(key: string): boolean {
  const name = key.toLowerCase().replace(/[-_]/g, '');
  return SECRET_KEY.test(name) || SECRET_NAMES.has(name);
}

/**
 * A copy of a log object with the value of every secret-named key replaced, at any depth and inside
 * arrays, and every error replaced by {@link describeError} (no stack, no driver message). Objects that
 * are neither plain nor arrays (dates, buffers) are kept as they are.
 *
 * @example
 * redactSecrets({ upstream: { headers: { Authorization: 'Bearer x' } }, err: new Error('boom') });
 * // { upstream: { headers: { Authorization: '[redacted]' } }, err: 'Error' }
 */
function redactSecrets(value: unknown, ancestors: Set<object> = new Set()): unknown {
  if (value instanceof Error) return describeError(value);
  if (value === null || typeof value !== 'object') return value;
  const proto = Object.getPrototypeOf(value) as unknown;
  if (!Array.isArray(value) && proto !== Object.prototype && proto !== null) return value;
  if (ancestors.has(value)) return '[Circular]';
  ancestors.add(value);
  const copy = Array.isArray(value)
    ? value.map((item) => redactSecrets(item, ancestors))
    : Object.fromEntries(Object.entries(value).map(([key, item]) => [key, isSecretKey(key) ? REDACTED : redactSecrets(item, ancestors)]));
  ancestors.delete(value);
  return copy;
}

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
  const redact = (object: Record<string, unknown>) => redactSecrets(object) as Record<string, unknown>;
  const config = {
    name,
    level: options.level ?? 'info',
    formatters: { log: redact },
    base: { service: name },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  const logger = options.destination ? pino(config, options.destination) : pino(config);
  // pino writes a child's bindings without the log formatter, so they are redacted on the way in.
  // Children inherit from their parent, so this covers grandchildren too.
  const pinoChild = logger.child;
  logger.child = function (this: Logger, bindings, childOptions) {
    return pinoChild.call(this, redact(bindings), childOptions);
  } as Logger['child'];
  return logger;
}

/** A logger that writes nothing, for tests that do not inspect logs. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
