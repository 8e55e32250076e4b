/**
 * The real servers that `bash tools/stack up` runs (PostgreSQL, Redis, Kafka, FerretDB), and helpers
 * that keep each test file isolated from the others running in parallel: a database, topic, group,
 * key prefix or Mongo database of its own, removed at teardown.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { MongoClient } from 'mongodb';

/** Connection settings for the stack's servers. */
export interface StackEnv {
  /** PostgreSQL 15, role `lintel` (superuser), database `lintel`. */
  DATABASE_URL: string;
  /** Redis. */
  REDIS_URL: string;
  /** Kafka bootstrap brokers, comma-separated `host:port`. */
  KAFKA_BROKERS: string;
  /** FerretDB (MongoDB wire protocol), database `lintel`. */
  MONGO_URI: string;
}

/** Anything with tap's `t.teardown` (a tap `Test`). */
export interface Teardown {
  teardown(fn: () => unknown): void;
}

const NAMES = ['DATABASE_URL', 'REDIS_URL', 'KAFKA_BROKERS', 'MONGO_URI'] as const;

/** `.stack/env.json` in the repository root, written by `bash tools/stack up`. */
export const STACK_ENV_FILE = fileURLToPath(new URL('../../.stack/env.json', import.meta.url));

let fromFile: Partial<StackEnv> | undefined;

function readEnvFile(): Partial<StackEnv> {
  if (fromFile === undefined) {
    fromFile = existsSync(STACK_ENV_FILE) ? (JSON.parse(readFileSync(STACK_ENV_FILE, 'utf8')) as Partial<StackEnv>) : {};
  }
  return fromFile;
}

/**
 * The stack's connection settings: each variable from `process.env` when set, otherwise from
 * `.stack/env.json`. Throws when neither has it (the stack was never started).
 */
export function stackEnv(): StackEnv {
  const file = readEnvFile();
  const env = {} as StackEnv;
  const missing: string[] = [];
  for (const name of NAMES) {
    const value = process.env[name] || file[name];
    if (value) env[name] = value;
    else missing.push(name);
  }
  if (missing.length > 0) {
    throw new Error(`${missing.join(', ')} not set and ${STACK_ENV_FILE} not found: run \`bash tools/stack up\` first`);
  }
  return env;
}

/**
 * `<prefix>_<random hex>`: a name no other test file or earlier run uses, for Kafka topics and
 * groups, Redis keys and channels, and Mongo or PostgreSQL databases (letters, digits, `_` only
 * when the prefix is).
 */
export function uniqueName(prefix: string): string {
  return `${prefix}_${randomBytes(6).toString('hex')}`;
}

/** Sessions of the pool's database waiting for a lock (writers queued behind a row a test holds). */
export async function sessionsWaitingForLocks(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'");
  return rows[0]?.n ?? 0;
}

/** Waits until at least `sessions` sessions of the pool's database wait for a lock (a bounded poll, not a timing). */
export async function untilSessionsWaitForLocks(pool: pg.Pool, sessions = 1): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if ((await sessionsWaitingForLocks(pool)) >= sessions) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`${sessions} session(s) never waited for a lock`);
}

/**
 * Creates a PostgreSQL database of its own (`lintel_test_<random>`) and returns its URL; it is
 * dropped at teardown, WITH (FORCE), so connections left open do not stop the drop.
 */
export async function freshPgDatabase(t: Teardown): Promise<string> {
  const adminUrl = stackEnv().DATABASE_URL;
  const name = uniqueName('lintel_test');
  await withPgClient(adminUrl, (client) => client.query(`CREATE DATABASE ${name}`));
  t.teardown(() => withPgClient(adminUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)));
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

async function withPgClient<T>(url: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

/**
 * A MONGO_URI naming a database of its own (`lintel_test_<random>`) on the stack's FerretDB;
 * the database is dropped at teardown.
 */
export async function freshMongoUri(t: Teardown): Promise<string> {
  const url = new URL(stackEnv().MONGO_URI);
  const name = uniqueName('lintel_test');
  url.pathname = `/${name}`;
  const uri = url.toString();
  t.teardown(async () => {
    const client = new MongoClient(uri, { serverSelectionTimeoutMS: 10_000 });
    try {
      await client.connect();
      await client.db(name).dropDatabase();
    } finally {
      await client.close();
    }
  });
  return uri;
}
