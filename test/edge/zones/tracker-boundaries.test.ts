import t from 'tap';
import { applyPoll, emptyTrackerState, transitionWindow, zoneCounts } from '../../../edge/src/zones/tracker.js';
import { ZONES, config, heard, run, silent } from './support/polls.js';

// Each rule at its exact boundary: one poll short of a threshold, exactly on it, a fraction of a dB under.

const repeat = <T>(n: number, item: T): T[] => Array.from({ length: n }, () => item);

/** d1 settled in the lobby at -60 dBm, the cafe answering without it. */
const inLobby = (cfg = config) => run([[heard('ap-l', 'lobby', { d1: -60 }), heard('ap-c', 'cafe', {})]], emptyTrackerState(), cfg).state;

t.test('both zones hear it, the new one louder within the margin: it moves on the switchPolls-th poll in a row', async (t) => {
  const both = [heard('ap-l', 'lobby', { d1: -66 }), heard('ap-c', 'cafe', { d1: -60 })];
  const short = run(repeat(config.switchPolls - 1, both), inLobby());
  t.equal(short.state.devices.get('d1')?.zone, 'lobby', 'one poll short: still in the lobby');
  t.same(short.moves, []);
  const on = run([both], short.state);
  t.equal(on.state.devices.get('d1')?.zone, 'cafe', 'the loudest zone for switchPolls polls in a row takes it');
  t.same(on.moves, [{ from: 'lobby', to: 'cafe', count: 1 }]);
  t.same(zoneCounts(on.state, ZONES), { lobby: 0, cafe: 1 });
});

t.test('a poll in which the incumbent zone is loudest again restarts the count', async (t) => {
  const cafeLouder = [heard('ap-l', 'lobby', { d1: -66 }), heard('ap-c', 'cafe', { d1: -60 })];
  const lobbyLouder = [heard('ap-l', 'lobby', { d1: -59 }), heard('ap-c', 'cafe', { d1: -60 })];
  const { state, moves } = run([cafeLouder, cafeLouder, lobbyLouder, cafeLouder, cafeLouder], inLobby());
  t.equal(state.devices.get('d1')?.zone, 'lobby');
  t.same(moves, []);
  t.equal(run([cafeLouder], state).state.devices.get('d1')?.zone, 'cafe', 'the third poll in a row after the interruption moves it');
});

t.test('an equal signal in both zones never moves a device, whatever the AP names or the margin', async (t) => {
  // ap-a (cafe) sorts before ap-z (lobby): the tie-break would pick the cafe for a new device.
  const tie = [heard('ap-z', 'lobby', { d1: -60 }), heard('ap-a', 'cafe', { d1: -60 })];
  const start = run([[heard('ap-z', 'lobby', { d1: -60 })]]).state;
  for (const switchMarginDb of [0, 8]) {
    const cfg = { ...config, switchMarginDb };
    const { state, moves } = run(repeat(10, tie), start, cfg);
    t.equal(state.devices.get('d1')?.zone, 'lobby', `margin ${switchMarginDb}: stays`);
    t.same(moves, [], `margin ${switchMarginDb}: no move`);
  }
  const fresh = run([tie]).state;
  t.equal(fresh.devices.get('d1')?.zone, 'cafe', 'a new device takes the tie-break (smaller AP name)');
});

t.test('with a margin of 0, a new zone louder by any amount takes the device at once', async (t) => {
  const cfg = { ...config, switchMarginDb: 0 };
  const { state, moves } = run([[heard('ap-l', 'lobby', { d1: -60.5 }), heard('ap-c', 'cafe', { d1: -60 })]], inLobby(cfg), cfg);
  t.equal(state.devices.get('d1')?.zone, 'cafe');
  t.same(moves, [{ from: 'lobby', to: 'cafe', count: 1 }]);
});

t.test('both zones hear it: exactly the margin moves it at once, a fraction of a dB less does not', async (t) => {
  const exactly = run([[heard('ap-l', 'lobby', { d1: -70 }), heard('ap-c', 'cafe', { d1: -62 })]], inLobby());
  t.equal(exactly.state.devices.get('d1')?.zone, 'cafe');
  const under = run([[heard('ap-l', 'lobby', { d1: -70 }), heard('ap-c', 'cafe', { d1: -62.01 })]], inLobby());
  t.equal(under.state.devices.get('d1')?.zone, 'lobby');
  t.equal(under.state.devices.get('d1')?.challengerPolls, 1, 'but the poll counts toward switchPolls');
});

t.test('only the new zone hears it: the margin is over the last signal known in its zone', async (t) => {
  const exactly = run([[heard('ap-l', 'lobby', {}), heard('ap-c', 'cafe', { d1: -52 })]], inLobby());
  t.equal(exactly.state.devices.get('d1')?.zone, 'cafe', '-60 then -52: moved at once');
  t.same(exactly.moves, [{ from: 'lobby', to: 'cafe', count: 1 }]);
  const under = run([[heard('ap-l', 'lobby', {}), heard('ap-c', 'cafe', { d1: -52.5 })]], inLobby());
  t.equal(under.state.devices.get('d1')?.zone, 'lobby', '-60 then -52.5: the dwell rule counts instead');
  t.equal(under.state.devices.get('d1')?.challengerPolls, 1);
});

t.test('its loudest AP missing it for one poll does not move a device the other zone hears', async (t) => {
  const home = [heard('ap-l', 'lobby', { d1: -50 }), heard('ap-c', 'cafe', { d1: -70 })];
  const missed = [heard('ap-l', 'lobby', {}), heard('ap-c', 'cafe', { d1: -70 })];
  const { state, moves } = run([home, missed, home, missed, home, missed], inLobby());
  t.equal(state.devices.get('d1')?.zone, 'lobby');
  t.same(moves, []);
});

t.test('frozen behind a silent AP: the margin over its last signal moves it, a fraction less does not', async (t) => {
  const exactly = run([[silent('ap-l', 'lobby'), heard('ap-c', 'cafe', { d1: -52 })]], inLobby());
  t.equal(exactly.state.devices.get('d1')?.zone, 'cafe');
  t.equal(exactly.state.devices.get('d1')?.frozenPolls, 0);
  const under = run([[silent('ap-l', 'lobby'), heard('ap-c', 'cafe', { d1: -52.01 })]], inLobby());
  t.equal(under.state.devices.get('d1')?.zone, 'lobby');
  t.equal(under.state.devices.get('d1')?.frozenPolls, 1);
});

t.test('frozen: counted for frozenPolls - 1 silent polls, dropped on the frozenPolls-th, and a return is an arrival', async (t) => {
  const down = [silent('ap-l', 'lobby'), heard('ap-c', 'cafe', {})];
  const short = run(repeat(config.frozenPolls - 1, down), inLobby());
  t.same(zoneCounts(short.state, ZONES), { lobby: 1, cafe: 0 });
  const last = applyPoll(short.state, { aps: down }, config);
  t.same(last.removed, [{ device: 'd1', reason: 'expired' }]);
  t.same(zoneCounts(last.state, ZONES), { lobby: 0, cafe: 0 });
  const back = applyPoll(last.state, { aps: [heard('ap-l', 'lobby', {}), heard('ap-c', 'cafe', { d1: -60 })] }, config);
  t.equal(back.stats.arrived, 1);
  t.same(back.moves, [], 'coming back in another zone after expiry is not a transition');
  t.same(transitionWindow(back.state, config), []);
});

t.test('a device heard once between two outages starts its frozen count afresh', async (t) => {
  const down = [silent('ap-l', 'lobby'), heard('ap-c', 'cafe', {})];
  const up = [heard('ap-l', 'lobby', { d1: -60 }), heard('ap-c', 'cafe', {})];
  const { state } = run([...repeat(config.frozenPolls - 1, down), up, ...repeat(config.frozenPolls - 1, down)], inLobby());
  t.equal(state.devices.get('d1')?.zone, 'lobby', 'heard once in between: the ceiling counts afresh');
  t.equal(state.devices.get('d1')?.frozenPolls, config.frozenPolls - 1);
});

t.test('a device missing one poll and heard again stays, and a later single miss does not remove it', async (t) => {
  const here = [heard('ap-l', 'lobby', { d1: -60 })];
  const away = [heard('ap-l', 'lobby', {})];
  const { state, moves } = run([away, here, away, here, away], inLobby());
  t.same(zoneCounts(state, ZONES), { lobby: 1, cafe: 0 });
  t.same(moves, []);
});

t.test('a device gone and back in another zone is an arrival, never a transition', async (t) => {
  const away = [heard('ap-l', 'lobby', {}), heard('ap-c', 'cafe', {})];
  const gone = run(repeat(config.absentPolls, away), inLobby()).state;
  t.notOk(gone.devices.has('d1'));
  const back = applyPoll(gone, { aps: [heard('ap-l', 'lobby', {}), heard('ap-c', 'cafe', { d1: -60 })] }, config);
  t.same(back.moves, []);
  t.same(zoneCounts(back.state, ZONES), { lobby: 0, cafe: 1 });
});

t.test('a device that moves and moves back within the window counts one transition each way', async (t) => {
  const inCafe = [heard('ap-l', 'lobby', { d1: -80 }), heard('ap-c', 'cafe', { d1: -50 })];
  const inLobbyAgain = [heard('ap-l', 'lobby', { d1: -50 }), heard('ap-c', 'cafe', { d1: -80 })];
  const { state, moves } = run([inCafe, inLobbyAgain], inLobby());
  t.same(moves, [
    { from: 'lobby', to: 'cafe', count: 1 },
    { from: 'cafe', to: 'lobby', count: 1 },
  ]);
  t.same(transitionWindow(state, config), [
    { from: 'cafe', to: 'lobby', count: 1 },
    { from: 'lobby', to: 'cafe', count: 1 },
  ]);
  t.same(zoneCounts(state, ZONES), { lobby: 1, cafe: 0 });
});

t.test('a move stays in the window for exactly transitionWindowPolls polls', async (t) => {
  const inCafe = [heard('ap-l', 'lobby', { d1: -80 }), heard('ap-c', 'cafe', { d1: -50 })];
  let state = run([inCafe], inLobby()).state;
  for (let poll = 2; poll <= config.transitionWindowPolls; poll++) {
    state = applyPoll(state, { aps: inCafe }, config).state;
    t.same(transitionWindow(state, config), [{ from: 'lobby', to: 'cafe', count: 1 }], `poll ${poll} of the window`);
  }
  state = applyPoll(state, { aps: inCafe }, config).state;
  t.same(transitionWindow(state, config), [{ from: 'lobby', to: 'cafe', count: 0 }], 'one poll past the window: 0, once');
});
