/**
 * Operator command for per-gateway ingest keys (the `ingest_keys` table, chosen by `X-Key-Id`):
 *
 *   DATABASE_URL=postgres://… npx tsx cloud/telemetry/keys-cli.ts add gw-lisbon-01 "Lisbon HQ gateway"
 *   DATABASE_URL=postgres://… npx tsx cloud/telemetry/keys-cli.ts list
 *   DATABASE_URL=postgres://… npx tsx cloud/telemetry/keys-cli.ts revoke gw-lisbon-01
 *
 * `add` prints the new secret once; give it to the gateway with its key id. The service picks a new or
 * revoked key up within 30 seconds (its key cache).
 */
import pg from 'pg';
import { readEnv, url } from '../../shared/env.js';
import { exitOnConfigError } from '../../shared/lifecycle.js';
import { PgIngestKeyStore } from './store/ingest-keys.js';
import { migrate } from './store/migrate.js';

const USAGE = 'usage: keys-cli.ts add <keyId> [note] | revoke <keyId> | list';

async function main(argv: string[]): Promise<number> {
  let env;
  try {
    env = readEnv({ DATABASE_URL: url(['postgres', 'postgresql']) });
  } catch (err) {
    exitOnConfigError(err);
  }
  const [command, keyId, note] = argv;
  if (!command || !['add', 'revoke', 'list'].includes(command) || (command !== 'list' && !keyId)) {
    process.stderr.write(`${USAGE}\n`);
    return 64;
  }
  const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: 1 });
  try {
    await migrate(pool);
    const keys = new PgIngestKeyStore(pool);
    if (command === 'add') {
      const secret = await keys.add(keyId!, note);
      process.stdout.write(`key id: ${keyId}\nsecret: ${secret}\n`);
      process.stderr.write('Store the secret on the gateway now; it is not shown again.\n');
    } else if (command === 'revoke') {
      if (!(await keys.revoke(keyId!))) {
        process.stderr.write(`no active key ${keyId}\n`);
        return 1;
      }
      process.stdout.write(`revoked ${keyId}\n`);
    } else {
      for (const key of await keys.list()) {
        process.stdout.write(`${key.keyId}\t${key.revokedAt ? `revoked ${key.revokedAt.toISOString()}` : 'active'}\t${key.createdAt.toISOString()}\t${key.note ?? ''}\n`);
      }
    }
    return 0;
  } catch (err) {
    process.stderr.write(`${err instanceof Error && !('code' in err) ? err.message : 'the database refused the command'}\n`);
    return 1;
  } finally {
    await pool.end();
  }
}

main(process.argv.slice(2)).then((code) => process.exit(code));
