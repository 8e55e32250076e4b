/** The ledger's schema steps: the `.sql` files beside this module. */
import { readMigrations, type Migration } from '../storage/sqlite.js';

export function ledgerMigrations(): Migration[] {
  return readMigrations(new URL('./migrations/', import.meta.url));
}
