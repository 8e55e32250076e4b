/**
 * Operator command for per-gateway ingest keys (the `ingest_keys` table, chosen by `X-Key-Id`), each
 * confined to the buildings it may write:
 *
 *   DATABASE_URL=postgres://… npx tsx cloud/telemetry/keys-cli.ts add gw-lisbon-01 --building b-lisbon-hq "Lisbon HQ gateway"
 *   DATABASE_URL=postgres://… npx tsx cloud/telemetry/keys-cli.ts bind gw-lisbon-01 --building b-lisbon-hq --building b-lisbon-annex
 *   DATABASE_URL=postgres://… npx tsx cloud/telemetry/keys-cli.ts list
 *   DATABASE_URL=postgres://… npx tsx cloud/telemetry/keys-cli.ts revoke gw-lisbon-01
 *
 * `add` prints the new secret once; give it to the gateway with its key id. `bind` replaces a key's
 * buildings and keeps its secret; `list` warns about keys made before keys named buildings, which may
 * write any. The service picks a new, rebound or revoked key up within 30 seconds (its key cache).
 * Exit codes: 0 done, 1 refused (by the store or the database), 2 bad environment, 64 bad command line.
 */
import pg from 'pg';
import { readEnv, url } from '../../shared/env.js';
import { exitOnConfigError } from '../../shared/lifecycle.js';
import { USAGE, parseKeysCommand, runKeysCommand } from './keys-command.js';
import { PgBuildingStore } from './store/buildings.js';
import { PgIngestKeyStore } from './store/ingest-keys.js';
import { migrate } from './store/migrate.js';

async function main(argv: string[]): Promise<number> {
  const parsed = parseKeysCommand(argv);
  if (!parsed.ok) {
    process.stderr.write(`${parsed.problems.join('\n')}\n${USAGE}\n`);
    return 64;
  }
  let env;
  try {
    env = readEnv({ DATABASE_URL: url(['postgres', 'postgresql']) });
  } catch (err) {
    exitOnConfigError(err);
  }
  const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: 1 });
  try {
    await migrate(pool);
    return await runKeysCommand(parsed.command, {
      keys: new PgIngestKeyStore(pool),
      buildings: new PgBuildingStore(pool),
      out: (text) => process.stdout.write(text),
      err: (text) => process.stderr.write(text),
    });
  } catch (err) {
    process.stderr.write(`${err instanceof Error && !('code' in err) ? err.message : 'the database refused the command'}\n`);
    return 1;
  } finally {
    await pool.end();
  }
}

main(process.argv.slice(2)).then((code) => process.exit(code));
