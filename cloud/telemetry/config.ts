/**
 * The service's environment, read once at start; every problem is reported at once.
 */
import { hostPorts, int, keyRing, logLevel, str, url } from '../../shared/env.js';

export const TELEMETRY_ENV = {
  PORT: int({ default: 3000, min: 0, max: 65535 }),
  DATABASE_URL: url(['postgres', 'postgresql']),
  REDIS_URL: url(['redis', 'rediss'], { default: 'redis://localhost:6379' }),
  KAFKA_BROKERS: hostPorts({ default: 'localhost:9092' }),
  DIGITAL_TWIN_URL: url(['http', 'https'], { default: 'http://localhost:3000' }),
  INGEST_SIGNING_SECRET: keyRing({ minLength: 16 }),
  PRIVACY_FLOOR: int({ default: 5, min: 1, max: 1000 }),
  LOG_LEVEL: logLevel(),
  // Optional renames, so several deployments (or a benchmark) can share one broker.
  ALERTS_TOPIC: str({ default: 'alerts' }),
  REGISTRATIONS_TOPIC: str({ default: 'building-registrations' }),
  REGISTRATIONS_GROUP: str({ default: 'telemetry-registrations' }),
  RAW_CHANNEL: str({ default: 'telemetry:raw' }),
  FILTERED_CHANNEL_PREFIX: str({ default: 'telemetry:filtered:' }),
};
