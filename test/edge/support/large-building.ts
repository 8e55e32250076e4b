/**
 * A building with more zones than one tick's readings fit in one ingest batch, for the tests of a tick
 * sent in several parts. Every zone reports totalDeviceCount and ratioDeviceCount, every AP apClients:
 * 3 readings a zone.
 */
import type { DaemonConfig } from '../../../edge/src/daemon.js';
import type { AccessPoint } from '../../../edge/src/poll/types.js';
import { DEFAULT_TRACKER_CONFIG } from '../../../edge/src/zones/types.js';

/**
 * `zoneCount` zones named `zone-0000` on, each with one AP of its own (`ap-zone-0000`, reported under
 * that name). The APs are never polled: the tests answer for them through a scripted poller port.
 *
 * @example
 * const config = largeBuilding(2000);
 * const answers = config.accessPoints.map((ap) => ({ ap: ap.name, zone: ap.zone, ok: true, durationMs: 1, stations: [] }));
 */
export function largeBuilding(zoneCount: number): DaemonConfig {
  const zoneIds = Array.from({ length: zoneCount }, (_, i) => `zone-${String(i).padStart(4, '0')}`);
  const aps: AccessPoint[] = zoneIds.map((zone) => ({ name: `ap-${zone}`, zone, dialect: 'aruba-aos', target: { transport: 'snmp', host: '127.0.0.1', port: 161, version: '2c', community: 'x' } }));
  return {
    buildingId: 'campus',
    pollIntervalMs: 60_000,
    requestTimeoutMs: 1000,
    zones: zoneIds.map((id) => ({ id, devicesPerPerson: 1.5 })),
    tracker: DEFAULT_TRACKER_CONFIG,
    accessPoints: aps,
    reportNames: Object.fromEntries(aps.map((ap) => [ap.name, ap.name])),
  };
}
