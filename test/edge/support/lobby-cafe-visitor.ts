/**
 * One visitor walking from the lobby to the cafe, as the collector's tick sees it (plain data, no
 * network): heard in the lobby at tick 1, then in the cafe by the margin from tick 2 on. With a
 * transition window of 2 polls the move is counted at ticks 2 and 3 and reported with 0 at tick 4
 * ({@link LOBBY_CAFE_FALL_TICK}). The tests of the zeros owed to the ingest share it.
 */
import type { DaemonConfig, TickReport } from '../../../edge/src/daemon.js';
import type { AccessPoint, ApPollResult, Poller } from '../../../edge/src/poll/types.js';
import { DEFAULT_TRACKER_CONFIG } from '../../../edge/src/zones/types.js';

const ap = (name: string, zone: string): AccessPoint => ({ name, zone, dialect: 'aruba-aos', target: { transport: 'snmp', host: '127.0.0.1', port: 161, version: '2c', community: 'x' } });

/** Two zones of one AP each, a window of 2 polls. */
export const LOBBY_CAFE_CONFIG: DaemonConfig = {
  buildingId: 'hq',
  pollIntervalMs: 10_000,
  requestTimeoutMs: 5_000,
  zones: [{ id: 'lobby' }, { id: 'cafe' }],
  tracker: { ...DEFAULT_TRACKER_CONFIG, transitionWindowPolls: 2 },
  accessPoints: [ap('ap-l', 'lobby'), ap('ap-c', 'cafe')],
  reportNames: {},
};

/** The tick at which the move leaves the window and is reported with 0. */
export const LOBBY_CAFE_FALL_TICK = 4;

const VISITOR = '02:00:00:00:00:01';
const heardAt = (lobby: number, cafe: number): ApPollResult[] => [
  { ap: 'ap-l', zone: 'lobby', ok: true, durationMs: 1, stations: [{ mac: VISITOR, rssiDbm: lobby }] },
  { ap: 'ap-c', zone: 'cafe', ok: true, durationMs: 1, stations: [{ mac: VISITOR, rssiDbm: cafe }] },
];

/** The visitor in the lobby at the first poll, then in the cafe. */
export function visitorPoller(): Poller {
  let calls = 0;
  return {
    async pollAll() {
      return calls++ === 0 ? heardAt(-50, -80) : heardAt(-80, -40);
    },
    async close() {},
  };
}

/** A tick's zone pairs, as `from>to:count`. */
export const pairsOf = (report: TickReport): string[] => report.transitions.map((p) => `${p.from}>${p.to}:${p.count}`);

/** The zoneTransition readings of a batch body, as `from>to:count`. */
export function transitionsInBody(body: string): string[] {
  const { readings } = JSON.parse(body) as { readings: Array<Record<string, unknown>> };
  return readings.filter((r) => r.type === 'zoneTransition').map((r) => `${String(r.fromRoomId)}>${String(r.roomId)}:${String(r.zoneTransition)}`);
}
