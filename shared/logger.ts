/**
 * JSON logs with pino. The claims header, signatures, cookies and every secret-named key are redacted
 * at any depth, so is the password of any URL, and an error object is logged as its class and code only.
 */
import pino, { type Logger, type DestinationStream, type LogFn, type LoggerOptions } from 'pino';
import { REDACTED, describeError, redactUrlPasswords } from './describe-error.js';

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
export { REDACTED };

function isSecretKey(key: string): boolean {
  const name = key.toLowerCase().replace(/[-_]/g, '');
  return SECRET_KEY.test(name) || SECRET_NAMES.has(name);
}

/**
 * A copy of a log object with the value of every secret-named key replaced, at any depth and inside
 * arrays, every URL password hidden, and every error replaced by {@link describeError} (no stack, no
 * driver message). Objects that serialise themselves (dates, buffers) are kept as they are; other class
 * instances (an options object) are copied as their own fields, which is how they would be written.
 *
 * @example
 * redactSecrets({ upstream: { headers: { Authorization: 'Bearer x' } }, err: new Error('boom') });
 * // { upstream: { headers: { Authorization: '[redacted]' } }, err: 'Error' }
 */
function redactSecrets(value: unknown, ancestors: Set<object> = new Set()): unknown {
  if (value instanceof Error) return describeError(value);
  if (typeof value === 'string') return redactUrlPasswords(value);
  if (value === null || typeof value !== 'object') return value;
  // A URL object is written as its href, password included.
  if (value instanceof URL) return redactUrlPasswords(value.href);
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return value;
  if (ancestors.has(value)) return '[Circular]';
  ancestors.add(value);
  const copy = Array.isArray(value)
    ? value.map((item) => redactSecrets(item, ancestors))
    : Object.fromEntries(Object.entries(value).map(([key, item]) => [key, isSecretKey(key) ? REDACTED : redactSecrets(item, ancestors)]));
  ancestors.delete(value);
  return copy;
}

/**
 * Makes a log call's message safe before pino builds it. The message and its format arguments
 * (`logger.info('connecting to %s', url)`) are not seen by the log formatter, so they are redacted here;
 * and pino takes an error's own message as the line's message when none is given
 * (`logger.error(err)`, `logger.error({ err })`), which may carry a connection string, so the error's
 * description is given as the message instead.
 */
function safeLogArguments(this: Logger, args: Parameters<LogFn>, method: LogFn): void {
  const [first, ...rest] = args as unknown[];
  const merging = first !== null && typeof first === 'object';
  const safe = [first, ...rest].map((arg, i) => (i === 0 && merging ? arg : redactSecrets(arg)));
  if (merging && rest.length === 0) {
    const err = first instanceof Error ? first : (first as { err?: unknown }).err;
    if (err instanceof Error && (first as { msg?: unknown }).msg === undefined) safe.push(describeError(err));
  }
  method.apply(this, safe as Parameters<LogFn>);
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
  const config: LoggerOptions = {
    name,
    level: options.level ?? 'info',
    formatters: { log: redact },
    hooks: { logMethod: safeLogArguments },
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
