/**
 * Tenancy's composition root: reads the environment, connects PostgreSQL, applies migrations, serves
 * HTTP on ADDR and, when REDIS_URL is set, consumes the account-deleted stream.
 *
 *   DATABASE_URL             required  postgres:// URL
 *   INTERNAL_SIGNING_SECRET  required  key ring for /internal/*: secrets of 16 characters or more, separated by commas, current first
 *   REDIS_URL                optional  redis:// URL; without it the account-deleted consumer never starts
 *   ADDR                     optional  [host]:port, default :3000
 *   LOG_LEVEL                optional  pino level, default info
 */
import { createServer, type Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { keyRing, listenAddr, logLevel, readEnv, url, type EnvOf } from '../../shared/env.js';
import { closeServer, configOrExit, listen, runOrExit } from '../../shared/lifecycle.js';
import { createLogger, type Logger } from '../../shared/logger.js';
import { AccountDeletedConsumer } from './account-deleted-consumer.js';
import { createTenancyApp } from './app.js';
import { openMigratedPool } from '../../shared/pg-migrations.js';
import { PgTenancyStore } from './pg-store.js';

const MIGRATIONS = fileURLToPath(new URL('./migrations/', import.meta.url));

const ENV_SPEC = {
  DATABASE_URL: url(['postgres', 'postgresql']),
  INTERNAL_SIGNING_SECRET: keyRing({ minLength: 16 }),
  REDIS_URL: url(['redis', 'rediss'], { optional: true }),
  ADDR: listenAddr({ default: ':3000' }),
  LOG_LEVEL: logLevel(),
};
type Env = EnvOf<typeof ENV_SPEC>;

class TenancyService {
  private pool: pg.Pool | undefined;
  private server: Server | undefined;
  private consumer: AccountDeletedConsumer | undefined;
  private readonly logger: Logger;
  private readonly env: Env;

  constructor(env: Env, logger: Logger) {
    this.env = env;
    this.logger = logger;
  }

  async start(): Promise<void> {
    const env = this.env;
    const keys = env.INTERNAL_SIGNING_SECRET;

    this.pool = await openMigratedPool(env.DATABASE_URL, 'tenancy', MIGRATIONS, { max: 16, logger: this.logger });

    const store = new PgTenancyStore(this.pool);
    this.server = createServer(createTenancyApp({ store, keys, logger: this.logger }));
    const port = await listen(this.server, env.ADDR.port, env.ADDR.host);
    this.logger.info({ port }, 'listening');

    if (env.REDIS_URL) {
      this.consumer = new AccountDeletedConsumer({ redisUrl: env.REDIS_URL, removeAccount: (id) => store.removeAccount(id), logger: this.logger });
      await this.consumer.start();
      this.logger.info('account-deleted consumer started');
    } else {
      this.logger.info('REDIS_URL not set; account-deleted consumer not started');
    }
  }

  async stop(): Promise<void> {
    await this.consumer?.stop();
    if (this.server) await closeServer(this.server);
    await this.pool?.end();
  }
}

// Every variable at once, so every problem is reported together (exit 2).
const env = configOrExit(() => readEnv(ENV_SPEC));
const logger = createLogger('tenancy', { level: env.LOG_LEVEL });
const service = new TenancyService(env, logger);
runOrExit(service, logger);
