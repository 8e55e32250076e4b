/**
 * Registry's composition root: reads the environment, connects PostgreSQL, applies migrations and
 * serves HTTP on ADDR.
 *
 *   DATABASE_URL             required  postgres:// URL
 *   INTERNAL_SIGNING_SECRET  required  key ring for /internal/*: secrets of 16 characters or more, separated by commas, current first
 *   ADDR                     optional  [host]:port, default :3000
 *   LOG_LEVEL                optional  pino level, default info
 */
import { createServer, type Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { keyRing, listenAddr, logLevel, readEnv, url, type EnvOf } from '../../shared/env.js';
import { closeServer, configOrExit, listen, runOrExit } from '../../shared/lifecycle.js';
import { createLogger, type Logger } from '../../shared/logger.js';
import { openMigratedPool } from '../../shared/pg-migrations.js';
import { createRegistryApp } from './app.js';
import { PgRegistryStore } from './pg-store.js';

const MIGRATIONS = fileURLToPath(new URL('./migrations/', import.meta.url));

const ENV_SPEC = {
  DATABASE_URL: url(['postgres', 'postgresql']),
  INTERNAL_SIGNING_SECRET: keyRing({ minLength: 16 }),
  ADDR: listenAddr({ default: ':3000' }),
  LOG_LEVEL: logLevel(),
};
type Env = EnvOf<typeof ENV_SPEC>;

class RegistryService {
  private pool: pg.Pool | undefined;
  private server: Server | undefined;
  private readonly logger: Logger;
  private readonly env: Env;

  constructor(env: Env, logger: Logger) {
    this.env = env;
    this.logger = logger;
  }

  async start(): Promise<void> {
    const env = this.env;
    const keys = env.INTERNAL_SIGNING_SECRET;

    this.pool = await openMigratedPool(env.DATABASE_URL, 'registry', MIGRATIONS, { max: 10, logger: this.logger });

    this.server = createServer(createRegistryApp({ store: new PgRegistryStore(this.pool), keys, logger: this.logger }));
    const port = await listen(this.server, env.ADDR.port, env.ADDR.host);
    this.logger.info({ port }, 'listening');
  }

  async stop(): Promise<void> {
    if (this.server) await closeServer(this.server);
    await this.pool?.end();
  }
}

// Every variable at once, so every problem is reported together (exit 2).
const env = configOrExit(() => readEnv(ENV_SPEC));
const logger = createLogger('registry', { level: env.LOG_LEVEL });
const service = new RegistryService(env, logger);
runOrExit(service, logger);
