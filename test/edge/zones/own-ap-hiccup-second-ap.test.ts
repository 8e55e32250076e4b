/**
 * A zone with two APs: devices known by the lobby's loud AP (-50), heard faintly by the lobby's second AP
 * (-75) and by the cafe's AP (-62). One tick in which the loud AP times out, or answers without their
 * rows, measured the cafe's lead against the faint AP (13 dB, beyond the margin): every device moved to
 * the cafe and back at the next tick, two moves per device reported for the whole transition window.
 * With one AP in the lobby the same tick freezes them (or starts the dwell count). Through the
 * collector's tick and the real SQLite zone store; the poller port is plain data.
 */
import t from 'tap';
import type { DaemonConfig, EdgeDaemon, TickReport } from '../../../edge/src/daemon.js';
import type { AccessPoint, ApPollResult, Poller } from '../../../edge/src/poll/types.js';
import { DEFAULT_TRACKER_CONFIG } from '../../../edge/src/zones/types.js';
import { setupDaemon } from '../support/daemon.js';

const MACS = ['02:00:00:00:00:01', '02:00:00:00:00:02', '02:00:00:00:00:03'];

const ap = (name: string, zone: string): AccessPoint => ({ name, zone, dialect: 'aruba-aos', target: { transport: 'snmp', host: '127.0.0.1', port: 161, version: '2c', community: 'lintel-ro' } });

const config: DaemonConfig = {
  buildingId: 'hq',
  pollIntervalMs: 10_000,
  requestTimeoutMs: 10_000,
  zones: [{ id: 'lobby' }, { id: 'cafe' }],
  tracker: DEFAULT_TRACKER_CONFIG,
  accessPoints: [ap('ap-l1', 'lobby'), ap('ap-l2', 'lobby'), ap('ap-c1', 'cafe')],
  reportNames: {},
};

/** What one AP says in one tick: every device at one signal, none of them, or a timeout. */
type Answer = number | 'empty' | 'timeout';
type Tick = Record<string, Answer>;

/**
 * The poller port for a building polled tick by tick as `script` says. An AP or a tick the script does
 * not name is refused, and kept in `refused` (the daemon takes a rejected poll for silent APs, which
 * would go unnoticed).
 */
function scriptedPoller(script: readonly Tick[]): Poller & { refused: string[] } {
  const refused: string[] = [];
  let tick = 0;
  return {
    refused,
    async pollAll(aps) {
      const answers = script[tick++];
      if (answers === undefined) refused.push(`tick ${tick}: not in the script`);
      return aps.map((a): ApPollResult => {
        const answer = answers?.[a.name];
        if (answer === undefined) {
          refused.push(`tick ${tick}: ${a.name} not in the script`);
          throw new Error(`scripted poller: ${a.name} at tick ${tick} is not in the script`);
        }
        if (answer === 'timeout') return { ap: a.name, zone: a.zone, ok: false, error: 'timed out', reason: 'timeout', durationMs: 1 };
        const stations = answer === 'empty' ? [] : MACS.map((mac) => ({ mac, rssiDbm: answer }));
        return { ap: a.name, zone: a.zone, ok: true, stations, durationMs: 1 };
      });
    },
    async close() {},
  };
}

const usual: Tick = { 'ap-l1': -50, 'ap-l2': -75, 'ap-c1': -62 };

async function ticks(daemon: EdgeDaemon, n: number): Promise<TickReport[]> {
  const reports: TickReport[] = [];
  for (let i = 0; i < n; i++) reports.push(await daemon.tick());
  return reports;
}

/** Every zoneTransition a run of ticks reported, as `from>to:count`. */
const transitionsOf = (reports: TickReport[]) => reports.flatMap((r) => r.transitions.map((p) => `${p.from}>${p.to}:${p.count}`));

for (const [what, hiccup] of [
  ['times out', 'timeout'],
  ['answers without their rows', 'empty'],
] as const) {
  t.test(`the loud AP of a two-AP zone ${what} for one tick: its devices move neither out nor back`, async (t) => {
    const poller = scriptedPoller([usual, { ...usual, 'ap-l1': hiccup }, usual, usual]);
    const { daemon } = setupDaemon(t, config, poller);
    const reports = await ticks(daemon, 4);
    t.same(
      reports.map((r) => r.counts),
      reports.map(() => ({ lobby: 3, cafe: 0 })),
      'counted in the lobby at every tick',
    );
    t.same(transitionsOf(reports), [], 'no zoneTransition: nobody walked');
    t.equal(reports.reduce((n, r) => n + r.stats.moved, 0), 0, 'no move counted');
    t.same(poller.refused, [], 'the poller was asked only what the script names');
  });
}

t.test('the loud AP silent for frozenPolls ticks: its devices go where they are heard loudest, with no move', async (t) => {
  const silentTicks = DEFAULT_TRACKER_CONFIG.frozenPolls;
  const poller = scriptedPoller([usual, ...Array.from({ length: silentTicks }, () => ({ ...usual, 'ap-l1': 'timeout' as const }))]);
  const { daemon } = setupDaemon(t, config, poller);
  const reports = await ticks(daemon, 1 + silentTicks);
  t.same(reports.at(-2)?.counts, { lobby: 3, cafe: 0 }, 'frozen in the lobby up to the ceiling');
  t.equal(reports.at(-2)?.frozen, 3);
  t.same(reports.at(-1)?.counts, { lobby: 0, cafe: 3 }, 'not held there past the ceiling');
  t.same(transitionsOf(reports), [], 'an arrival, not a move');
  t.same(poller.refused, []);
});
