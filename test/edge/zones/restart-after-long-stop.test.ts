/**
 * The tracker counts in polls, and a stopped collector polls nothing. A collector stopped at 18:00 and
 * started at 08:00 the next day once reported the evening's moves as moves of the current window (for up
 * to a window of ticks, into readings kept for days) and counted the evening's devices at its first
 * ticks. The zone store now keeps the wall-clock time of the poll it saved last, and a start after a
 * stop longer than the transition window counts from what the APs report now. A short restart still
 * goes on as if no poll was missed. A start whose clock reads the last shutdown (a gateway without an RTC)
 * took a weekend for seconds, and went on reporting Friday's moves once NTP set the clock: a step of the
 * wall clock past the window between two ticks now starts over too. Through the collector's tick and the
 * real SQLite zone store.
 */
import t, { type Test } from 'tap';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { DaemonConfig, EdgeDaemon, TickReport } from '../../../edge/src/daemon.js';
import type { AccessPoint, ApPollResult, Poller } from '../../../edge/src/poll/types.js';
import { openSqliteZoneStore } from '../../../edge/src/zones/store.js';
import { applyPoll, emptyTrackerState } from '../../../edge/src/zones/tracker.js';
import { DEFAULT_TRACKER_CONFIG } from '../../../edge/src/zones/types.js';
import { collectorOn } from '../support/collector-on-file.js';
import { testHasher } from '../support/daemon.js';

const ap = (name: string, zone: string): AccessPoint => ({ name, zone, dialect: 'aruba-aos', target: { transport: 'snmp', host: '127.0.0.1', port: 161, version: '2c', community: 'x' } });
// As the sample configuration: a poll every 10 s, a 300 s transition window (30 polls).
const POLL_MS = 10_000;
const config: DaemonConfig = {
  buildingId: 'hq',
  pollIntervalMs: POLL_MS,
  requestTimeoutMs: 5_000,
  zones: [{ id: 'lobby' }, { id: 'cafe' }],
  tracker: { ...DEFAULT_TRACKER_CONFIG, transitionWindowPolls: 30 },
  accessPoints: [ap('ap-lobby', 'lobby'), ap('ap-cafe', 'cafe')],
  reportNames: {},
};

const VISITOR = '02:00:00:00:00:01';
const CLERK = '02:00:00:00:00:02';
const BARISTA = '02:00:00:00:00:03';
const EARLY_BIRD = '02:00:00:00:00:04';

const answered = (name: string, zone: string, stations: Array<[string, number]>): ApPollResult => ({
  ap: name,
  zone,
  ok: true,
  durationMs: 1,
  stations: stations.map(([mac, rssiDbm]) => ({ mac, rssiDbm })),
});
const booting = (name: string, zone: string): ApPollResult => ({ ap: name, zone, ok: false, error: 'timeout', durationMs: 5_000, reason: 'timeout' });

/** The evening: the visitor walks from the lobby to the cafe (by the margin), the clerk stays, the barista is in the cafe. */
const evening: ApPollResult[][] = [
  [answered('ap-lobby', 'lobby', [[VISITOR, -50], [CLERK, -50]]), answered('ap-cafe', 'cafe', [[VISITOR, -80], [BARISTA, -50]])],
  [answered('ap-lobby', 'lobby', [[VISITOR, -80], [CLERK, -50]]), answered('ap-cafe', 'cafe', [[VISITOR, -45], [BARISTA, -50]])],
  [answered('ap-lobby', 'lobby', [[VISITOR, -80], [CLERK, -50]]), answered('ap-cafe', 'cafe', [[VISITOR, -45], [BARISTA, -50]])],
];
/** The next start: the lobby AP hears the first arrival only; the cafe AP is still booting. */
const morning: ApPollResult[][] = [
  [answered('ap-lobby', 'lobby', [[EARLY_BIRD, -50]]), booting('ap-cafe', 'cafe')],
  [answered('ap-lobby', 'lobby', [[EARLY_BIRD, -50]]), booting('ap-cafe', 'cafe')],
];

/** The poller port answering from a script, one entry per tick (plain data, no network); a tick past the script fails the test. */
function scriptedPoller(script: ApPollResult[][]): Poller {
  let calls = 0;
  return {
    async pollAll() {
      const next = script[calls++];
      if (next === undefined) throw new Error(`unexpected poll ${calls}: the script has ${script.length}`);
      return next;
    },
    async close() {},
  };
}

/** A wall clock the test sets; each tick moves it one poll interval on. */
function testClock(start: number) {
  let now = start;
  return {
    now: () => now,
    set: (at: number) => void (now = at),
    tick: () => void (now += POLL_MS),
  };
}

async function ticks(daemon: EdgeDaemon, script: readonly unknown[], clock: ReturnType<typeof testClock>): Promise<TickReport[]> {
  const reports: TickReport[] = [];
  for (let i = 0; i < script.length; i++) {
    reports.push(await daemon.tick());
    clock.tick();
  }
  return reports;
}

const pairsOf = (report: TickReport) => report.transitions.map((p) => `${p.from}>${p.to}:${p.count}`);
const countsOf = (report: TickReport) => `lobby ${report.counts.lobby}, cafe ${report.counts.cafe}`;

const EVENING = Date.UTC(2026, 0, 5, 17, 59, 30);
const NEXT_MORNING = Date.UTC(2026, 0, 6, 8, 0, 0);

/** The evening through one collector, stopped at 18:00; the zone file's path. */
async function eveningSaved(t: Test): Promise<{ path: string; clock: ReturnType<typeof testClock> }> {
  const path = join(t.testdir({}), 'zones.sqlite');
  const clock = testClock(EVENING);
  const first = collectorOn(t, path, config, scriptedPoller(evening), { clock: clock.now });
  const reports = await ticks(first.daemon, evening, clock);
  t.same(pairsOf(reports.at(-1)!), ['lobby>cafe:1'], 'the evening: the visitor moved, counted in the window');
  await first.stop();
  return { path, clock };
}

t.test('a start 14 hours after the stop reports none of the evening moves and counts none of the evening devices', async (t) => {
  const { path, clock } = await eveningSaved(t);
  clock.set(NEXT_MORNING);
  const second = collectorOn(t, path, config, scriptedPoller(morning), { clock: clock.now });
  const [first, next] = await ticks(second.daemon, morning, clock);

  t.same(pairsOf(first!), ['lobby>cafe:0'], "the evening's pair is reported once with 0, as a pair leaving the window is, not with its count");
  t.same(pairsOf(next!), [], 'then no more');
  t.equal(countsOf(first!), 'lobby 1, cafe 0', 'the counts are what the APs report now: not the clerk (unheard), nor the visitor and barista (behind the booting AP)');
  t.equal(first!.tracked, 1);
  t.equal(first!.frozen, 0);
  t.same(first!.stats, { heard: 1, arrived: 1, moved: 0, frozen: 0, gone: 0, expired: 0 }, 'no device of the evening was stepped');

  await second.stop();
  const reopened = openSqliteZoneStore(path);
  t.teardown(() => reopened.close());
  const stored = reopened.load();
  t.same([...stored.devices.keys()], [testHasher().idOf(EARLY_BIRD)], "the file no longer holds the evening's devices either");
  t.same(stored.transitions.filter((e) => e.count > 0), [], 'nor its moves');
  t.equal(reopened.savedAt(), NEXT_MORNING + POLL_MS, 'it holds the time of the last poll saved');
});

t.test('a start after a stop exactly as long as the window goes on; one poll interval longer starts over', async (t) => {
  // The evening's last poll ran at EVENING + 2 intervals; the window is 30 intervals.
  const lastEveningPoll = EVENING + 2 * POLL_MS;
  const within = await eveningSaved(t);
  within.clock.set(lastEveningPoll + 30 * POLL_MS);
  const goesOn = collectorOn(t, within.path, config, scriptedPoller(morning.slice(0, 1)), { clock: within.clock.now });
  const [atTheEdge] = await ticks(goesOn.daemon, morning.slice(0, 1), within.clock);
  t.same(pairsOf(atTheEdge!), ['lobby>cafe:1'], 'the move is still in the window');
  t.equal(countsOf(atTheEdge!), 'lobby 2, cafe 2', 'the clerk, one poll unheard, and the two behind the booting AP still count');

  const past = await eveningSaved(t);
  past.clock.set(lastEveningPoll + 31 * POLL_MS);
  const startsOver = collectorOn(t, past.path, config, scriptedPoller(morning.slice(0, 1)), { clock: past.clock.now });
  const [beyond] = await ticks(startsOver.daemon, morning.slice(0, 1), past.clock);
  t.same(pairsOf(beyond!), ['lobby>cafe:0']);
  t.equal(countsOf(beyond!), 'lobby 1, cafe 0');
});

t.test('a short restart goes on exactly as a collector that never stopped', async (t) => {
  // Two minutes between the stop and the start (a reboot, an upgrade): continuous in polls, as a
  // collector that never stopped but whose clock jumped as far.
  const afterRestart = [...morning, [answered('ap-lobby', 'lobby', [[EARLY_BIRD, -50]]), answered('ap-cafe', 'cafe', [[VISITOR, -45]])]];
  const restartedAt = EVENING + 2 * POLL_MS + 120_000;

  const { path, clock } = await eveningSaved(t);
  clock.set(restartedAt);
  const second = collectorOn(t, path, config, scriptedPoller(afterRestart), { clock: clock.now });
  const restarted = await ticks(second.daemon, afterRestart, clock);

  const neverStopped = testClock(EVENING);
  const only = collectorOn(t, join(t.testdir({}), 'zones.sqlite'), config, scriptedPoller([...evening, ...afterRestart]), { clock: neverStopped.now });
  await ticks(only.daemon, evening, neverStopped);
  neverStopped.set(restartedAt);
  const continuous = await ticks(only.daemon, afterRestart, neverStopped);

  const view = (reports: TickReport[]) => reports.map((r) => ({ poll: r.poll, counts: r.counts, transitions: r.transitions, stats: r.stats, frozen: r.frozen }));
  t.same(view(restarted), view(continuous));
  t.same(
    restarted.map((r) => `${countsOf(r)} | ${pairsOf(r).join(' ')}`),
    ['lobby 2, cafe 2 | lobby>cafe:1', 'lobby 1, cafe 2 | lobby>cafe:1', 'lobby 1, cafe 2 | lobby>cafe:1'],
    'the move stays in the window; the clerk, unheard, is gone on the 2nd missed poll; the two behind the booting AP stay counted',
  );
});

t.test('a zone file from before the time was kept loads, and a start over it counts from the APs', async (t) => {
  const path = join(t.testdir({}), 'zones.sqlite');
  // As the collector saved before this change: the same tables, no time in tracker_meta.
  const old = openSqliteZoneStore(path);
  const hasher = testHasher();
  const heardIn = (zone: string, id: string, rssiDbm: number) => ({ ap: `ap-${zone}`, zone, answered: true as const, stations: [{ device: hasher.idOf(id), rssiDbm }] });
  let outcome = applyPoll(emptyTrackerState(), { aps: [heardIn('lobby', VISITOR, -50), heardIn('cafe', BARISTA, -50)] }, config.tracker);
  old.save(outcome);
  const lobbyToCafe = { ap: 'ap-cafe', zone: 'cafe', answered: true as const, stations: [{ device: hasher.idOf(VISITOR), rssiDbm: -40 }, { device: hasher.idOf(BARISTA), rssiDbm: -50 }] };
  outcome = applyPoll(outcome.state, { aps: [{ ap: 'ap-lobby', zone: 'lobby', answered: true, stations: [{ device: hasher.idOf(VISITOR), rssiDbm: -80 }] }, lobbyToCafe] }, config.tracker);
  old.save(outcome);
  old.close();
  const db = new Database(path, { readonly: true });
  t.same(db.prepare('SELECT key FROM tracker_meta ORDER BY key').pluck().all(), ['poll', 'transition_window_polls'], 'the file holds no time');
  db.close();

  const store = openSqliteZoneStore(path);
  t.teardown(() => store.close());
  t.equal(store.savedAt(), undefined, 'its time is unknown');
  t.equal(store.load().devices.size, 2, 'the store loads the file whole');
  store.close();

  const clock = testClock(NEXT_MORNING);
  const collector = collectorOn(t, path, config, scriptedPoller(morning), { clock: clock.now });
  const [first, next] = await ticks(collector.daemon, morning, clock);
  t.same(pairsOf(first!), ['lobby>cafe:0'], 'a stop of unknown length is taken for a long one: the move is not reported again as a move of now');
  t.same(pairsOf(next!), []);
  t.equal(countsOf(first!), 'lobby 1, cafe 0');
});

t.test('a zone state dated after the wall clock (a clock that went back) loads, and the start counts from the APs', async (t) => {
  for (const [why, at] of [
    ['a gateway booting before NTP', Date.UTC(1970, 0, 1, 0, 0, 5)],
    ['a clock stepped back a minute', EVENING + 2 * POLL_MS - 60_000],
  ] as const) {
    const { path, clock } = await eveningSaved(t);
    clock.set(at);
    const collector = collectorOn(t, path, config, scriptedPoller(morning.slice(0, 1)), { clock: clock.now });
    const [first] = await ticks(collector.daemon, morning.slice(0, 1), clock);
    t.same(pairsOf(first!), ['lobby>cafe:0'], `${why}: no stale move`);
    t.equal(countsOf(first!), 'lobby 1, cafe 0', `${why}: the counts are the APs'`);
    await collector.stop();
  }
});

t.test('a start whose clock reads the last shutdown, set forward by NTP later, starts over when the clock steps', async (t) => {
  // A gateway without an RTC (fake-hwclock): stopped on Friday evening, booted on Monday with the clock
  // it saved at its shutdown, seconds after the last poll; NTP sets it a minute after the start.
  const { path, clock } = await eveningSaved(t);
  const lastEveningPoll = EVENING + 2 * POLL_MS;
  clock.set(lastEveningPoll + 36_000);
  // On Monday the visitor, in the cafe on Friday, is in the lobby; the clerk is not in.
  const mondayPoll = [answered('ap-lobby', 'lobby', [[EARLY_BIRD, -50], [VISITOR, -45]]), answered('ap-cafe', 'cafe', [[BARISTA, -50]])];
  const afterNtp = [mondayPoll, mondayPoll, mondayPoll, mondayPoll];
  const monday = collectorOn(t, path, config, scriptedPoller([...morning.slice(0, 1), ...afterNtp]), { clock: clock.now });

  const [beforeNtp] = await ticks(monday.daemon, morning.slice(0, 1), clock);
  t.same(pairsOf(beforeNtp!), ['lobby>cafe:1'], 'before NTP nothing tells the collector how long it was stopped: the state is taken up as after a short restart');

  clock.set(NEXT_MORNING);
  const stepped = await ticks(monday.daemon, afterNtp, clock);
  t.equal(stepped[0]!.timestamp, NEXT_MORNING, 'the tick of the step is stamped Monday');
  t.same(pairsOf(stepped[0]!), ['lobby>cafe:0'], "Friday's pair is reported once with 0, not with its count under Monday's time");
  t.equal(countsOf(stepped[0]!), 'lobby 2, cafe 1', "the counts are what the APs report now, not Friday's devices");
  t.same(
    stepped.map((r) => `${pairsOf(r).join(' ')} moved ${r.stats.moved}`),
    ['lobby>cafe:0 moved 0', ' moved 0', ' moved 0', ' moved 0'],
    'the visitor, in the cafe on Friday and heard in the lobby on Monday, arrives there: no move is counted',
  );

  await monday.stop();
  const reopened = openSqliteZoneStore(path);
  t.teardown(() => reopened.close());
  const stored = reopened.load();
  const idsOf = (macs: string[]) => macs.map((mac) => testHasher().idOf(mac)).sort();
  t.same([...stored.devices.keys()].sort(), idsOf([EARLY_BIRD, VISITOR, BARISTA]), "the file holds Monday's devices only: the clerk, unheard since the step, is not kept");
  t.same(stored.transitions.filter((e) => e.count > 0), [], 'nor any move');
});

t.test('a time edited by hand into something that is no time is no time known', async (t) => {
  const path = join(t.testdir({}), 'zones.sqlite');
  const store = openSqliteZoneStore(path);
  t.teardown(() => store.close());
  const outcome = applyPoll(emptyTrackerState(), { aps: [{ ap: 'ap-lobby', zone: 'lobby', answered: true, stations: [{ device: 'd1', rssiDbm: -50 }] }] }, config.tracker);
  store.save(outcome, { at: EVENING });
  t.equal(store.savedAt(), EVENING);
  const db = new Database(path);
  db.prepare("UPDATE tracker_meta SET value = 'yesterday' WHERE key = 'poll_at_ms'").run();
  db.close();
  t.equal(store.savedAt(), undefined);
  t.equal(store.load().devices.size, 1, 'and the state loads');
});
