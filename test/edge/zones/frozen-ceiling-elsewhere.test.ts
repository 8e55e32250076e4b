/**
 * A device frozen behind a silent AP reaches the ceiling in a poll where another zone hears it faintly:
 * it is dropped from its zone and admitted where it is heard, an arrival, never a zone transition (the
 * new zone neither beat the margin nor had it for switchPolls polls).
 */
import t from 'tap';
import { applyPoll, transitionWindow, zoneCounts } from '../../../edge/src/zones/tracker.js';
import { ZONES, config, heard, run, silent } from './support/polls.js';
import { reopenedAfter } from './support/stored-run.js';

const repeat = <T>(n: number, item: T): T[] => Array.from({ length: n }, () => item);

/** d1 in the lobby at -55, then its AP silent for frozenPolls - 1 polls, the cafe answering without it. */
function frozenToTheCeiling() {
  const start = run([[heard('ap-l', 'lobby', { d1: -55 }), heard('ap-c', 'cafe', {})]]).state;
  return run(repeat(config.frozenPolls - 1, [silent('ap-l', 'lobby'), heard('ap-c', 'cafe', {})]), start).state;
}
const faintInCafe = [silent('ap-l', 'lobby'), heard('ap-c', 'cafe', { d1: -80 })];

t.test('one faint sighting elsewhere at the frozen ceiling is an arrival there, not a transition', async (t) => {
  const before = frozenToTheCeiling();
  t.equal(before.devices.get('d1')?.frozenPolls, config.frozenPolls - 1, 'one poll short of the ceiling');
  const ceiling = applyPoll(before, { aps: faintInCafe }, config);
  t.equal(ceiling.state.devices.get('d1')?.zone, 'cafe', 'counted where it is heard');
  t.same(zoneCounts(ceiling.state, ZONES), { lobby: 0, cafe: 1 }, 'counted once');
  t.same(ceiling.moves, [], 'no move');
  t.same(transitionWindow(ceiling.state, config), [], 'no zone transition reported');
  t.match(ceiling.stats, { moved: 0, expired: 1, arrived: 1 });
  t.same(ceiling.removed, [], 'its row is rewritten, not deleted');
  t.same(ceiling.state.devices.get('d1'), { zone: 'cafe', ap: 'ap-c', rssiDbm: -80, challengerZone: null, challengerPolls: 0, frozenPolls: 0, absentPolls: 0, lastHeardPoll: ceiling.state.poll });
});

t.test('a device heard elsewhere by the margin while frozen still moves, a transition', async (t) => {
  const before = frozenToTheCeiling();
  const loud = applyPoll(before, { aps: [silent('ap-l', 'lobby'), heard('ap-c', 'cafe', { d1: -55 + config.switchMarginDb })] }, config);
  t.same(loud.moves, [{ from: 'lobby', to: 'cafe', count: 1 }]);
  t.match(loud.stats, { moved: 1, expired: 0, arrived: 0 });
});

t.test('the re-admitted device survives a restart where it is heard', async (t) => {
  const again = reopenedAfter(t, [
    [heard('ap-l', 'lobby', { d1: -55 }), heard('ap-c', 'cafe', {})],
    ...repeat(config.frozenPolls - 1, [silent('ap-l', 'lobby'), heard('ap-c', 'cafe', {})]),
    faintInCafe,
  ]);
  const loaded = again.load();
  t.same(zoneCounts(loaded, ZONES), { lobby: 0, cafe: 1 });
  t.same(loaded.transitions, [], 'no transition stored');
});
