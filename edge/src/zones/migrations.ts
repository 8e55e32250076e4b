/** The zone store's schema steps: the `.sql` files beside this module. */
import { readMigrations, type Migration } from '../storage/sqlite.js';

export function zoneMigrations(): Migration[] {
  return readMigrations(new URL('./migrations/', import.meta.url));
}
