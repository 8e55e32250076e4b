/**
 * The telemetry schema: `migrations/*.sql`, applied at start by the kernel's migration runner
 * (`shared/pg-migrations.ts`: once each, in order, under an advisory lock, checksummed). The files are
 * also written to be idempotent.
 */
import { fileURLToPath } from 'node:url';
import type { Pool } from 'pg';
import { runMigrations } from '../../../shared/pg-migrations.js';

export const MIGRATIONS_DIR = fileURLToPath(new URL('../migrations/', import.meta.url));

/** Applies the telemetry migrations not applied yet; returns their versions. */
export async function migrate(pool: Pool): Promise<string[]> {
  return (await runMigrations(pool, 'telemetry', MIGRATIONS_DIR)).applied;
}
