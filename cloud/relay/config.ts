/**
 * The relay's environment, read once at start. Every problem is reported at once.
 */
import { ConfigError, int, logLevel, readEnv, str, url } from '../../shared/env.js';
import { DEFAULT_CHANNELS, type BrokerChannels } from './routing.js';

export const RELAY_ENV = {
  PORT: int({ default: 3000, min: 0, max: 65535 }),
  /** Broker of the subscriber. No default: a relay without a broker relays nothing. */
  REDIS_URL: url(['redis', 'rediss']),
  FRONTEND_URL: url(['http', 'https'], { default: 'http://localhost:5173' }),
  DIGITAL_TWIN_URL: url(['http', 'https'], { default: 'http://digital-twin:3000' }),
  /** At most 20 days, so the lifetime fits a Node timer. */
  SOCKET_MAX_LIFETIME_SECS: int({ default: 900, min: 1, max: 20 * 24 * 3600 }),
  NOTIFICATIONS_CHANNEL: str({ default: DEFAULT_CHANNELS.notifications }),
  TELEMETRY_CHANNEL_PREFIX: str({ default: DEFAULT_CHANNELS.telemetryPrefix }),
  LOG_LEVEL: logLevel(),
};

export interface RelayConfig {
  port: number;
  redisUrl: string;
  /** The origin (scheme, host, port) of FRONTEND_URL: the only cross-origin caller allowed. */
  frontendOrigin: string;
  directoryUrl: string;
  maxLifetimeMs: number;
  channels: BrokerChannels;
  logLevel: string;
}

/**
 * Reads the relay's configuration from an environment, or throws a ConfigError naming every problem.
 *
 * @example
 * readRelayConfig({ REDIS_URL: 'redis://127.0.0.1:6379' }).maxLifetimeMs; // 900_000
 */
export function readRelayConfig(source: NodeJS.ProcessEnv = process.env): RelayConfig {
  const overlap = channelOverlap(source);
  let env: ReturnType<typeof readEnv<typeof RELAY_ENV>>;
  try {
    env = readEnv(RELAY_ENV, source);
  } catch (err) {
    if (err instanceof ConfigError && overlap !== undefined) throw new ConfigError([...err.problems, overlap]);
    throw err;
  }
  if (overlap !== undefined) throw new ConfigError([overlap]);
  return {
    port: env.PORT,
    redisUrl: env.REDIS_URL,
    frontendOrigin: new URL(env.FRONTEND_URL).origin,
    directoryUrl: env.DIGITAL_TWIN_URL,
    maxLifetimeMs: env.SOCKET_MAX_LIFETIME_SECS * 1000,
    channels: { notifications: env.NOTIFICATIONS_CHANNEL, telemetryPrefix: env.TELEMETRY_CHANNEL_PREFIX },
    logLevel: env.LOG_LEVEL,
  };
}

/**
 * The telemetry subscription is a pattern, the prefix followed by anything: a notifications channel it
 * also matches would reach the relay twice, and every notification would be relayed twice. Read apart
 * from the other variables, so this problem is reported with theirs.
 */
function channelOverlap(source: NodeJS.ProcessEnv): string | undefined {
  const notifications = RELAY_ENV.NOTIFICATIONS_CHANNEL.read(source.NOTIFICATIONS_CHANNEL);
  const prefix = RELAY_ENV.TELEMETRY_CHANNEL_PREFIX.read(source.TELEMETRY_CHANNEL_PREFIX);
  if (!notifications.ok || !prefix.ok || !notifications.value.startsWith(prefix.value)) return undefined;
  return `NOTIFICATIONS_CHANNEL: ${JSON.stringify(notifications.value)} starts with TELEMETRY_CHANNEL_PREFIX ${JSON.stringify(prefix.value)}, so the telemetry pattern would match it too`;
}
