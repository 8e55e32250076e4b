import t from 'tap';
import { applyPoll, transitionWindow, zoneCounts } from '../../../edge/src/zones/tracker.js';
import { ZONES, config, heard, run, silent } from './support/polls.js';

t.test('a device heard by two APs in two zones is counted once, in the loudest one', async (t) => {
  const { state } = run([[heard('ap-l', 'lobby', { d1: -70, d2: -40 }), heard('ap-c', 'cafe', { d1: -50, d2: -80 })]]);
  t.same(zoneCounts(state, ZONES), { lobby: 1, cafe: 1 });
  t.equal(state.devices.get('d1')?.zone, 'cafe');
  t.equal(state.devices.get('d2')?.zone, 'lobby');
});

t.test('two APs of one zone listing the same device count it once', async (t) => {
  const { state } = run([[heard('ap-l1', 'lobby', { d1: -60 }), heard('ap-l2', 'lobby', { d1: -55 })]]);
  t.same(zoneCounts(state, ZONES), { lobby: 1, cafe: 0 });
  t.equal(state.devices.get('d1')?.ap, 'ap-l2');
});

t.test('equal signals break ties by AP name whatever the AP order', async (t) => {
  const a = run([[heard('ap-b', 'cafe', { d1: -60 }), heard('ap-a', 'lobby', { d1: -60 })]]).state;
  const b = run([[heard('ap-a', 'lobby', { d1: -60 }), heard('ap-b', 'cafe', { d1: -60 })]]).state;
  t.equal(a.devices.get('d1')?.zone, 'lobby');
  t.equal(b.devices.get('d1')?.zone, 'lobby');
});

t.test('a new zone louder within the margin, never for N polls in a row, does not move a device its zone still hears', async (t) => {
  const cafeLouder = [heard('ap-l', 'lobby', { d1: -60 }), heard('ap-c', 'cafe', { d1: -53 })];
  const lobbyLouder = [heard('ap-l', 'lobby', { d1: -58 }), heard('ap-c', 'cafe', { d1: -59 })];
  const polls = Array.from({ length: 10 }, (_, i) => (i % 3 === 2 ? lobbyLouder : cafeLouder));
  const first = [[heard('ap-l', 'lobby', { d1: -50 })]];
  const { state, moves } = run([...first, ...polls]);
  t.equal(state.devices.get('d1')?.zone, 'lobby');
  t.same(moves, []);
});

t.test('a new zone beating the incumbent by the margin takes the device at once', async (t) => {
  const { state, moves } = run([[heard('ap-l', 'lobby', { d1: -50 })], [heard('ap-l', 'lobby', { d1: -70 }), heard('ap-c', 'cafe', { d1: -62 })]]);
  t.equal(state.devices.get('d1')?.zone, 'cafe');
  t.same(moves, [{ from: 'lobby', to: 'cafe', count: 1 }]);
});

t.test('a device only the new zone hears moves after N consecutive polls', async (t) => {
  const start = run([[heard('ap-l', 'lobby', { d1: -60 }), heard('ap-c', 'cafe', {})]]).state;
  const away = [heard('ap-l', 'lobby', {}), heard('ap-c', 'cafe', { d1: -62 })];
  const after2 = run([away, away], start).state;
  t.equal(after2.devices.get('d1')?.zone, 'lobby', 'still in its zone after N-1 polls');
  t.equal(after2.devices.get('d1')?.challengerPolls, 2);
  const after3 = run([away], after2);
  t.equal(after3.state.devices.get('d1')?.zone, 'cafe', 'moved on the N-th poll');
  t.same(after3.moves, [{ from: 'lobby', to: 'cafe', count: 1 }]);
});

t.test('an interrupted dwell starts counting again', async (t) => {
  const start = run([[heard('ap-l', 'lobby', { d1: -60 }), heard('ap-c', 'cafe', {})]]).state;
  const away = [heard('ap-l', 'lobby', {}), heard('ap-c', 'cafe', { d1: -62 })];
  const home = [heard('ap-l', 'lobby', { d1: -60 }), heard('ap-c', 'cafe', {})];
  const { state } = run([away, away, home, away, away], start);
  t.equal(state.devices.get('d1')?.zone, 'lobby');
});

t.test('a device behind a silent AP is frozen in its zone, then dropped at the ceiling', async (t) => {
  const start = run([[heard('ap-l', 'lobby', { d1: -60 }), heard('ap-c', 'cafe', { d2: -60 })]]).state;
  const reboot = [silent('ap-l', 'lobby'), heard('ap-c', 'cafe', { d2: -60 })];
  const during = run([reboot, reboot, reboot, reboot], start).state;
  t.same(zoneCounts(during, ZONES), { lobby: 1, cafe: 1 }, 'counted while frozen');
  t.equal(during.devices.get('d1')?.frozenPolls, 4);
  const back = run([[heard('ap-l', 'lobby', { d1: -61 }), heard('ap-c', 'cafe', { d2: -60 })]], during).state;
  t.equal(back.devices.get('d1')?.frozenPolls, 0, 'thawed when its AP hears it again');
  const expired = run([reboot, reboot, reboot, reboot, reboot], start);
  t.notOk(expired.state.devices.has('d1'), 'dropped after frozenPolls silent polls');
  t.same(zoneCounts(expired.state, ZONES), { lobby: 0, cafe: 1 });
});

t.test('a faint sighting elsewhere during its AP reboot does not move a device', async (t) => {
  const start = run([[heard('ap-l', 'lobby', { d1: -55 }), heard('ap-c', 'cafe', {})]]).state;
  const reboot = [silent('ap-l', 'lobby'), heard('ap-c', 'cafe', { d1: -80 })];
  const { state, moves } = run([reboot, reboot, reboot, reboot], start);
  t.equal(state.devices.get('d1')?.zone, 'lobby');
  t.same(moves, []);
  const ceiling = run([reboot, reboot, reboot, reboot, reboot], start).state;
  t.equal(ceiling.devices.get('d1')?.zone, 'cafe', 'at the ceiling the zone that hears it takes it');
});

t.test('a device no longer heard while its AP answers is gone after absentPolls', async (t) => {
  const start = run([[heard('ap-l', 'lobby', { d1: -60 })]]).state;
  const empty = [heard('ap-l', 'lobby', {})];
  const once = applyPoll(start, { aps: empty }, config);
  t.equal(zoneCounts(once.state, ZONES).lobby, 1, 'one missed poll is not a departure');
  const twice = applyPoll(once.state, { aps: empty }, config);
  t.equal(zoneCounts(twice.state, ZONES).lobby, 0);
  t.same(twice.removed, [{ device: 'd1', reason: 'gone' }]);
});

t.test('transitions are summed per pair over the window, then reported 0 once', async (t) => {
  let state = run([[heard('ap-l', 'lobby', { d1: -50, d2: -50 }), heard('ap-c', 'cafe', {})]]).state;
  const jump = [heard('ap-l', 'lobby', { d1: -80, d2: -80 }), heard('ap-c', 'cafe', { d1: -40, d2: -40 })];
  state = applyPoll(state, { aps: jump }, config).state;
  t.same(transitionWindow(state, config), [{ from: 'lobby', to: 'cafe', count: 2 }]);
  const stay = [heard('ap-l', 'lobby', { d1: -80, d2: -80 }), heard('ap-c', 'cafe', { d1: -40, d2: -40 })];
  for (let i = 0; i < 3; i++) state = applyPoll(state, { aps: stay }, config).state;
  t.same(transitionWindow(state, config), [{ from: 'lobby', to: 'cafe', count: 2 }], 'still inside the window');
  state = applyPoll(state, { aps: stay }, config).state;
  t.same(transitionWindow(state, config), [{ from: 'lobby', to: 'cafe', count: 0 }], 'fell out: reported 0');
  state = applyPoll(state, { aps: stay }, config).state;
  t.same(transitionWindow(state, config), [], 'then no longer reported');
});

t.test('applyPoll leaves its input state untouched', async (t) => {
  const start = run([[heard('ap-l', 'lobby', { d1: -60 })]]).state;
  const snapshot = JSON.stringify([...start.devices]);
  applyPoll(start, { aps: [heard('ap-c', 'cafe', { d1: -30 }), heard('ap-l', 'lobby', {})] }, config);
  t.equal(JSON.stringify([...start.devices]), snapshot);
  t.equal(start.poll, 1);
});
