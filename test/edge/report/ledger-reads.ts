/** Reading a ledger file as an auditor would, for tests. */
import { openLedger } from '../../../edge/src/report/ledger.js';

/** Each entry's delivery, oldest first, read without marking anything (read-only). */
export function deliveriesOf(path: string): Array<string | null> {
  const ledger = openLedger(path, { readonly: true });
  try {
    return [...ledger.entries()].map((e) => e.delivery);
  } finally {
    ledger.close();
  }
}
