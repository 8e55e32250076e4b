/**
 * Recorded controller tables the edge tests add to the shared ones (test/support/peers/recordings): the
 * AP status tables of the recorded controllers, the same controllers while some of their APs are down,
 * and a controller listing stations it has no signal reading for. Served by the real snmpd like any recording.
 *
 * @example
 * const snmpd = await startSnmpd({ recordings: [recording('cisco-wlc.snmpwalk'), edgeRecording('cisco-wlc-aps.snmpwalk')] });
 */
import { fileURLToPath } from 'node:url';

const EDGE_RECORDINGS_DIR = fileURLToPath(new URL('./recordings/', import.meta.url));

/** The path of one edge recording, e.g. `edgeRecording('cisco-wlc-ap-down.snmpwalk')`. */
export function edgeRecording(name: string): string {
  return `${EDGE_RECORDINGS_DIR}${name}`;
}
