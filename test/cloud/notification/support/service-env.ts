/**
 * The environment of `npm run notification` in the process tests: the stack's Redis and Kafka unless
 * told otherwise, a database, a directory and VAPID keys of the test's, and push services on loopback
 * plain http allowed (the tests' push hosts listen there).
 */
import { STACK } from './stack.js';

export interface ServiceEnvOptions {
  mongoUri: string;
  directoryUrl: string;
  vapid: { publicKey: string; privateKey: string };
  /** Default the stack's Redis. */
  redisUrl?: string;
  /** Default the stack's Kafka. */
  kafkaBrokers?: string;
}

export function serviceEnv(options: ServiceEnvOptions): Record<string, string> {
  return {
    MONGO_URI: options.mongoUri,
    REDIS_URL: options.redisUrl ?? STACK.redisUrl,
    KAFKA_BROKERS: options.kafkaBrokers ?? STACK.kafkaBrokers.join(','),
    DIGITAL_TWIN_URL: options.directoryUrl,
    VAPID_PUBLIC_KEY: options.vapid.publicKey,
    VAPID_PRIVATE_KEY: options.vapid.privateKey,
    WEB_PUSH_ALLOW_HTTP: 'true',
    WEB_PUSH_ALLOW_PRIVATE_DESTINATIONS: 'true',
  };
}
