/**
 * Composition root of the socket relay: reads the environment, wires the directory client and the Redis
 * subscriber into the relay, and stops cleanly on SIGTERM.
 */
import { describeError } from '../../shared/errors.js';
import { configOrExit, runUntilSignal } from '../../shared/lifecycle.js';
import { createLogger } from '../../shared/logger.js';
import { createRegistry } from '../../shared/prom.js';
import { createRelay } from './app.js';
import { readRelayConfig, type RelayConfig } from './config.js';
import { relayDirectory } from './directory.js';
import { RedisSubscriber } from './redis-subscriber.js';
import { telemetryPattern } from './routing.js';

const config: RelayConfig = configOrExit(readRelayConfig);

const logger = createLogger('relay', { level: config.logLevel });
const broker = new RedisSubscriber({
  url: config.redisUrl,
  channels: [config.channels.notifications],
  patterns: [telemetryPattern(config.channels)],
  logger,
});
const relay = createRelay(
  {
    directory: relayDirectory(config.directoryUrl),
    broker,
    registry: createRegistry('relay'),
    logger,
  },
  { frontendOrigin: config.frontendOrigin, maxLifetimeMs: config.maxLifetimeMs, channels: config.channels },
);

try {
  await runUntilSignal(
    {
      start: async () => {
        await relay.start(config.port);
      },
      stop: () => relay.stop(),
    },
    logger,
  );
} catch (err) {
  // e.g. the port is taken: say so in one safe line, not a stack trace.
  logger.fatal({ error: describeError(err), port: config.port }, 'relay failed to start');
  process.exit(1);
}
