/**
 * Zones with two APs, where a second AP of a device's zone hears it faintly. That fainter AP must not
 * speak for the device when the AP it is known by is silent, misses its row, or is no longer configured:
 *
 * - one failed poll or one missed row of its own AP moved it to the louder zone at once (the fainter AP's
 *   signal was the incumbent a margin was measured by) and back at the next poll: two moves reported for
 *   the whole transition window, where a zone with one AP freezes it or starts the dwell count;
 * - an AP renamed into another zone by a reload moved its devices there (by the margin, or after
 *   `switchPolls` polls) because their old zone still heard them through its other AP: a move nobody made.
 *
 * Real walkers still move: by the margin over their last signal, or by the dwell rule.
 */
import t from 'tap';
import { applyPoll, transitionWindow } from '../../../edge/src/zones/tracker.js';
import type { ApObservation, TrackerState } from '../../../edge/src/zones/types.js';
import { config, heard, run, silent } from './support/polls.js';

const repeat = <T>(n: number, item: T): T[] => Array.from({ length: n }, () => item);

/** d1 in the lobby, known by ap-l1 at -50; ap-l2 (lobby) hears it at -75, ap-c1 (cafe) at -62. */
const settledInLobby: ApObservation[] = [heard('ap-l1', 'lobby', { d1: -50 }), heard('ap-l2', 'lobby', { d1: -75 }), heard('ap-c1', 'cafe', { d1: -62 }), heard('ap-c2', 'cafe', {})];

function startInLobby(): TrackerState {
  const { state } = run([settledInLobby]);
  if (state.devices.get('d1')?.ap !== 'ap-l1') throw new Error('setup: d1 is not known by ap-l1');
  return state;
}

/** The same building with ap-l1 in another state and the others hearing d1 as before. */
const withOwnAp = (ownAp: ApObservation): ApObservation[] => [ownAp, heard('ap-l2', 'lobby', { d1: -75 }), heard('ap-c1', 'cafe', { d1: -62 }), heard('ap-c2', 'cafe', {})];
const ownApSilent = withOwnAp(silent('ap-l1', 'lobby'));
const ownApMissedRow = withOwnAp(heard('ap-l1', 'lobby', {}));

t.test('one failed poll of its own AP, a second AP of its zone hearing it faintly, moves it neither out nor back', async (t) => {
  const start = startInLobby();
  const hiccup = applyPoll(start, { aps: ownApSilent }, config);
  t.equal(hiccup.state.devices.get('d1')?.zone, 'lobby', 'kept in its zone while its AP is silent');
  t.equal(hiccup.state.devices.get('d1')?.frozenPolls, 1, 'frozen, as in a zone with one AP');
  t.same(hiccup.moves, [], 'no move while its AP is silent');
  const { state, moves } = run([settledInLobby, settledInLobby], hiccup.state);
  t.equal(state.devices.get('d1')?.zone, 'lobby');
  t.same(moves, [], 'no move back');
  t.same(transitionWindow(state, config), [], 'no zone transition reported');
});

t.test('one missed row of its own AP, a second AP of its zone hearing it faintly, moves it neither out nor back', async (t) => {
  const start = startInLobby();
  const missed = applyPoll(start, { aps: ownApMissedRow }, config);
  t.equal(missed.state.devices.get('d1')?.zone, 'lobby', 'one missed row is not a move');
  t.equal(missed.state.devices.get('d1')?.challengerPolls, 1, 'the dwell count starts, as in a zone with one AP');
  t.same(missed.moves, []);
  const { state, moves } = run([settledInLobby, settledInLobby], missed.state);
  t.equal(state.devices.get('d1')?.zone, 'lobby');
  t.same(moves, [], 'no move back');
  t.same(transitionWindow(state, config), []);
});

t.test('behind its silent AP up to the frozen ceiling, it then arrives where it is heard loudest, with no move', async (t) => {
  const start = startInLobby();
  const short = run(repeat(config.frozenPolls - 1, ownApSilent), start);
  t.equal(short.state.devices.get('d1')?.zone, 'lobby', 'kept for frozenPolls - 1 silent polls');
  t.equal(short.state.devices.get('d1')?.frozenPolls, config.frozenPolls - 1);
  const ceiling = applyPoll(short.state, { aps: ownApSilent }, config);
  t.equal(ceiling.state.devices.get('d1')?.zone, 'cafe', 'not held in its zone past the ceiling');
  t.same([...short.moves, ...ceiling.moves], [], 'an arrival, not a move');
  t.match(ceiling.stats, { moved: 0, expired: 1, arrived: 1 });
});

t.test('its own AP answering without it while the other zone hears it louder than its zone: it moves by the dwell rule', async (t) => {
  const start = startInLobby();
  const before = run(repeat(config.switchPolls - 1, ownApMissedRow), start);
  t.equal(before.state.devices.get('d1')?.zone, 'lobby', 'still in its zone for switchPolls - 1 polls');
  const after = applyPoll(before.state, { aps: ownApMissedRow }, config);
  t.equal(after.state.devices.get('d1')?.zone, 'cafe', 'moved on the switchPolls-th poll');
  t.same(after.moves, [{ from: 'lobby', to: 'cafe', count: 1 }]);
  const gone = run(repeat(config.absentPolls, [heard('ap-l1', 'lobby', {}), heard('ap-l2', 'lobby', {}), heard('ap-c1', 'cafe', {})]), start);
  t.notOk(gone.state.devices.has('d1'), 'unheard by all while they answer, it is gone after absentPolls');
});

t.test('while its own AP is silent, a margin over its last signal there still moves it at once', async (t) => {
  const loud = [silent('ap-l1', 'lobby'), heard('ap-l2', 'lobby', { d1: -75 }), heard('ap-c1', 'cafe', { d1: -50 + config.switchMarginDb })];
  const { state, moves } = run([loud], startInLobby());
  t.equal(state.devices.get('d1')?.zone, 'cafe');
  t.same(moves, [{ from: 'lobby', to: 'cafe', count: 1 }]);
});

t.test('a real walker, heard weaker by its own AP and louder by the other zone poll by poll, moves', async (t) => {
  const walk = (l1: number, c1: number): ApObservation[] => [heard('ap-l1', 'lobby', { d1: l1 }), heard('ap-l2', 'lobby', { d1: -75 }), heard('ap-c1', 'cafe', { d1: c1 }), heard('ap-c2', 'cafe', {})];
  // leads of 3, 5 and 6 dB: below the margin, so it moves on the switchPolls-th poll
  const dwelling = run([walk(-58, -55), walk(-61, -56), walk(-63, -57)], startInLobby());
  t.equal(dwelling.state.devices.get('d1')?.zone, 'cafe', 'moved by the dwell rule');
  t.same(dwelling.moves, [{ from: 'lobby', to: 'cafe', count: 1 }]);
  // out of its own AP's range, heard by the cafe by the margin over its last signal there
  const gone = [heard('ap-l1', 'lobby', {}), heard('ap-l2', 'lobby', { d1: -78 }), heard('ap-c1', 'cafe', { d1: -45 }), heard('ap-c2', 'cafe', {})];
  const striding = run([walk(-55, -60), gone], startInLobby());
  t.same(striding.moves, [{ from: 'lobby', to: 'cafe', count: 1 }], 'moved by the margin at once');
});

t.test('an AP renamed into another zone while its old zone still hears its devices: they arrive there, with no move', async (t) => {
  // ap-3 hears them loudest in the lobby, ap-lobby faintly; a reload renames ap-3 to cafe-1 in the cafe
  const start = run([[heard('ap-3', 'lobby', { d1: -55, d2: -55 }), heard('ap-lobby', 'lobby', { d1: -80, d2: -80 })]]).state;
  const renamed = [heard('cafe-1', 'cafe', { d1: -55, d2: -55 }), heard('ap-lobby', 'lobby', { d1: -80, d2: -80 })];
  const first = applyPoll(start, { aps: renamed }, config);
  t.equal(first.state.devices.get('d1')?.zone, 'cafe', 'counted in the cafe at the first poll');
  t.same(first.moves, [], 'no move: nobody walked');
  t.match(first.stats, { moved: 0, expired: 2, arrived: 2 });
  const { state, moves } = run(repeat(config.switchPolls + config.transitionWindowPolls, renamed), first.state);
  t.same(moves, []);
  t.same(transitionWindow(state, config), []);
});

t.test('an AP renamed into another zone, its old zone hearing its devices within the margin: no move after switchPolls either', async (t) => {
  const start = run([[heard('ap-3', 'lobby', { d1: -55 }), heard('ap-lobby', 'lobby', { d1: -60 })]]).state;
  const renamed = [heard('cafe-1', 'cafe', { d1: -55 }), heard('ap-lobby', 'lobby', { d1: -60 })];
  const { state, moves } = run(repeat(config.switchPolls + 1, renamed), start);
  t.equal(state.devices.get('d1')?.zone, 'cafe');
  t.same(moves, [], 'the dwell rule never counted');
  t.same(transitionWindow(state, config), []);
});

t.test('an AP renamed within its zone keeps its devices there', async (t) => {
  const start = run([[heard('ap-3', 'lobby', { d1: -55 }), heard('ap-lobby', 'lobby', { d1: -80 }), heard('ap-c', 'cafe', { d1: -70 })]]).state;
  const outcome = applyPoll(start, { aps: [heard('lobby-3', 'lobby', { d1: -55 }), heard('ap-lobby', 'lobby', { d1: -80 }), heard('ap-c', 'cafe', { d1: -70 })] }, config);
  t.same(outcome.state.devices.get('d1'), { zone: 'lobby', ap: 'lobby-3', rssiDbm: -55, challengerZone: null, challengerPolls: 0, frozenPolls: 0, absentPolls: 0, lastHeardPoll: 2 });
  t.match(outcome.stats, { moved: 0, expired: 0, arrived: 0 });
});
