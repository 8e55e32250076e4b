/**
 * `simulate --help` said a temporary state directory is removed "either way", while a run with --ingest
 * keeps the ledger of the batches it posted (simulate-ingest-keeps-ledger.test.ts). It now says so, and
 * where, as README's demo paragraph does.
 */
import t from 'tap';
import { main } from '../../../edge/src/commands/main.js';
import { captureIo } from '../support/cli-io.js';

t.test('the help says the ledger of the batches posted with --ingest is kept, and where', async (t) => {
  const { out, io } = captureIo();
  t.equal(await main(['simulate', '--help'], io), 0);
  const help = out.join('').replace(/\s+/g, ' ');
  t.match(help, 'a temporary state directory is removed (--state-dir keeps it), but for the ledger of the batches posted with --ingest');
  t.match(help, 'kept in a lintel-edge-ledger-* directory under $TMPDIR: the first line says where, the last prints its path with the ledger verify command');
  t.match(help, "The device key and the building's SSH and SNMP secrets are removed all the same");
});
