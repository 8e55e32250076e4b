/**
 * The transition window shrinking between two polls (a reload or restart with a longer poll interval or
 * a shorter transitionWindowS): a pair that the last report counted and the shorter window no longer
 * holds is reported once with 0, as a pair leaving an unchanged window is, never silently dropped.
 */
import t from 'tap';
import type { DaemonConfig } from '../../../edge/src/daemon.js';
import type { AccessPoint, ApPollResult, Poller } from '../../../edge/src/poll/types.js';
import { applyPoll, transitionWindow } from '../../../edge/src/zones/tracker.js';
import type { TrackerConfig, TrackerState } from '../../../edge/src/zones/types.js';
import { setupDaemon } from '../support/daemon.js';
import { config, heard, run } from './support/polls.js';
import { reopenedAfter } from './support/stored-run.js';

const wide: TrackerConfig = { ...config, transitionWindowPolls: 4 };
const narrow: TrackerConfig = { ...config, transitionWindowPolls: 1 };

const home = [heard('ap-l', 'lobby', { d1: -50, d2: -50 }), heard('ap-c', 'cafe', { d1: -80, d2: -80 })];
const d1InCafe = [heard('ap-l', 'lobby', { d1: -80, d2: -50 }), heard('ap-c', 'cafe', { d1: -40, d2: -80 })];
const d2InCafeToo = [heard('ap-l', 'lobby', { d1: -80, d2: -80 }), heard('ap-c', 'cafe', { d1: -40, d2: -40 })];

const pairs = (state: TrackerState, cfg: TrackerConfig) => transitionWindow(state, cfg).map((p) => `${p.from}>${p.to}:${p.count}`);

/** Poll 2 moves d1 to the cafe; polls 3 and 4 keep it there; the window of 4 still counts the move at poll 4. */
function movedUnderTheWideWindow(): TrackerState {
  const { state } = run([home, d1InCafe, d1InCafe, d1InCafe], undefined, wide);
  return state;
}

t.test('a pair the shrunk window drops is reported once with 0, then no more', async (t) => {
  const before = movedUnderTheWideWindow();
  t.same(pairs(before, wide), ['lobby>cafe:1'], 'counted under the wide window');
  const shrunk = applyPoll(before, { aps: d1InCafe }, narrow).state;
  t.same(pairs(shrunk, narrow), ['lobby>cafe:0'], 'fell out with the shrink: 0, once');
  const after = applyPoll(shrunk, { aps: d1InCafe }, narrow).state;
  t.same(pairs(after, narrow), [], 'then no longer reported');
});

t.test('a pair the shrunk window still holds keeps its count beside one that fell out', async (t) => {
  const before = movedUnderTheWideWindow();
  // d2 follows at poll 5, under the narrow window: lobby>cafe has a move inside it, so no 0 for that pair
  const shrunk = applyPoll(before, { aps: d2InCafeToo }, narrow).state;
  t.same(pairs(shrunk, narrow), ['lobby>cafe:1']);
  // a pair of its own that fell out is still reported with 0
  const cafeToLobby = [heard('ap-l', 'lobby', { d1: -40 }), heard('ap-c', 'cafe', { d1: -80 })];
  const back = applyPoll(before, { aps: cafeToLobby }, wide).state;
  t.same(pairs(back, wide), ['cafe>lobby:1', 'lobby>cafe:1']);
  const shrunkAgain = applyPoll(back, { aps: cafeToLobby }, { ...config, transitionWindowPolls: 2 }).state;
  t.same(pairs(shrunkAgain, { ...config, transitionWindowPolls: 2 }), ['cafe>lobby:1', 'lobby>cafe:0']);
});

t.test('a wider window reports as before, with nothing brought back', async (t) => {
  const { state } = run([home, d1InCafe, d1InCafe, d1InCafe], undefined, narrow);
  t.same(pairs(state, narrow), []);
  const widened = applyPoll(state, { aps: d1InCafe }, wide).state;
  t.same(pairs(widened, wide), []);
});

t.test('a restart with a shorter window still reports the pair once with 0', async (t) => {
  const again = reopenedAfter(t, [home, d1InCafe, d1InCafe, d1InCafe], wide);
  const loaded = again.load();
  t.equal(loaded.transitionWindowPolls, 4, 'the store keeps the window its state was counted under');
  const first = applyPoll(loaded, { aps: d1InCafe }, narrow);
  again.save(first);
  t.same(pairs(first.state, narrow), ['lobby>cafe:0']);
  t.same(pairs(again.load(), narrow), ['lobby>cafe:0'], 'the 0 entry is stored (poll, pair) like any other');
  t.same(pairs(applyPoll(again.load(), { aps: d1InCafe }, narrow).state, narrow), []);
});

t.test('the daemon reports the 0 on the first tick after a reload shrinks the window', async (t) => {
  const ap = (name: string, zone: string): AccessPoint => ({ name, zone, dialect: 'aruba-aos', target: { transport: 'snmp', host: '127.0.0.1', port: 161, version: '2c', community: 'x' } });
  const mac = '02:00:00:00:00:01';
  const result = (lobby: number, cafe: number): ApPollResult[] => [
    { ap: 'ap-l', zone: 'lobby', ok: true, durationMs: 1, stations: [{ mac, rssiDbm: lobby }] },
    { ap: 'ap-c', zone: 'cafe', ok: true, durationMs: 1, stations: [{ mac, rssiDbm: cafe }] },
  ];
  // a device answering from a script, one poll per tick (plain data, no network)
  const script = [result(-50, -80), result(-80, -40)];
  let calls = 0;
  const poller: Poller = {
    async pollAll() {
      return script[Math.min(calls++, script.length - 1)] as ApPollResult[];
    },
    async close() {},
  };
  // a 30 s transition window: 6 polls at 5 s, then 1 poll once a reload sets pollIntervalS to 30
  const configOf = (pollIntervalS: number): DaemonConfig => ({
    buildingId: 'hq',
    pollIntervalMs: pollIntervalS * 1000,
    requestTimeoutMs: 1000,
    zones: [{ id: 'lobby' }, { id: 'cafe' }],
    tracker: { ...config, transitionWindowPolls: Math.ceil(30 / pollIntervalS) },
    accessPoints: [ap('ap-l', 'lobby'), ap('ap-c', 'cafe')],
    reportNames: { 'ap-l': 'ap-l', 'ap-c': 'ap-c' },
  });
  const before = configOf(5);
  const { daemon } = setupDaemon(t, before, poller);
  await daemon.tick();
  await daemon.tick();
  const moved = await daemon.tick();
  t.same(moved.transitions, [{ from: 'lobby', to: 'cafe', count: 1 }], 'the move counted under the 6-poll window');
  t.same(await daemon.reconfigure({ config: configOf(30) }), { applied: true, rezoned: 0 });
  const reloaded = await daemon.tick();
  t.same(reloaded.transitions, [{ from: 'lobby', to: 'cafe', count: 0 }], 'reported once with 0 after the reload');
  const next = await daemon.tick();
  t.same(next.transitions, []);
});
