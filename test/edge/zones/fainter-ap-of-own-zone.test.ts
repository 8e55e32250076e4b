/**
 * A zone with two APs, where the loudest sighting of a device in a poll is a faint one in its own zone,
 * while the AP it is known by is silent or leaves its row out. That faint AP took the device over at
 * once, so:
 *
 * - an AP reboot dropped a device it should have frozen: the faint AP, answering without it at the next
 *   poll, made it absent, and it was gone after `absentPolls` polls (an arrival when its AP came back);
 * - an AP reboot became two reported moves: the other zone's lead was measured against the faint signal
 *   (a margin), not against its last signal at its own AP, and it moved out and back.
 *
 * The AP it is known by keeps it until that AP would let go of it (the frozen ceiling, or the
 * `absentPolls`-th missed row); a sighting in its zone at least as loud as its last signal there still
 * takes it over at once.
 */
import t from 'tap';
import { applyPoll, transitionWindow, zoneCounts } from '../../../edge/src/zones/tracker.js';
import type { ApObservation, TrackerState } from '../../../edge/src/zones/types.js';
import { DEFAULT_TRACKER_CONFIG } from '../../../edge/src/zones/types.js';
import { heard, run, silent } from './support/polls.js';

const config = DEFAULT_TRACKER_CONFIG;
const ZONES = ['a', 'b'];

/** What one AP says in one poll: d at this dBm, no row for d, or nothing (silent). */
type Answer = number | 'empty' | 'silent';

/** A poll of the building: X and Y in zone a, Z in zone b. */
function poll(x: Answer, y: Answer, z: Answer): ApObservation[] {
  const ap = (name: string, zone: string, answer: Answer) =>
    answer === 'silent' ? silent(name, zone) : heard(name, zone, answer === 'empty' ? {} : { d: answer });
  return [ap('X', 'a', x), ap('Y', 'a', y), ap('Z', 'b', z)];
}

/** P1: d in zone a, known by X at -50. */
function knownByX(): TrackerState {
  const { state } = run([poll(-50, 'empty', 'empty')], undefined, config);
  if (state.devices.get('d')?.ap !== 'X') throw new Error('setup: d is not known by X');
  return state;
}

t.test('X reboots while Y hears d once faintly: d is frozen, counted, up to the frozen ceiling', async (t) => {
  let state = applyPoll(knownByX(), { aps: poll('silent', -85, 'empty') }, config).state;
  t.match(state.devices.get('d'), { zone: 'a', ap: 'X', rssiDbm: -50, frozenPolls: 1 }, 'still known by X, frozen');
  // P3 to P30: X silent, Y answering without d
  for (let p = 3; p <= config.frozenPolls; p++) {
    const outcome = applyPoll(state, { aps: poll('silent', 'empty', 'empty') }, config);
    state = outcome.state;
    if (outcome.removed.length > 0) {
      t.fail(`d was dropped at poll ${p}: ${outcome.removed.map((r) => r.reason).join(', ')}`);
      return;
    }
  }
  t.same(zoneCounts(state, ZONES), { a: 1, b: 0 }, 'still counted in zone a at the last silent poll before the ceiling');
  t.equal(state.devices.get('d')?.frozenPolls, config.frozenPolls - 1, 'frozen for frozenPolls - 1 silent polls');
  const ceiling = applyPoll(state, { aps: poll('silent', 'empty', 'empty') }, config);
  t.same(ceiling.removed, [{ device: 'd', reason: 'expired' }], 'dropped at the frozenPolls-th silent poll');
});

t.test('X back after a short reboot while Y heard d once faintly: d was counted throughout, no arrival', async (t) => {
  const polls = [poll('silent', -85, 'empty'), poll('silent', 'empty', 'empty'), poll('silent', 'empty', 'empty'), poll(-50, 'empty', 'empty')];
  let state = knownByX();
  let arrived = 0;
  for (const aps of polls) {
    const outcome = applyPoll(state, { aps }, config);
    state = outcome.state;
    arrived += outcome.stats.arrived;
    t.same(zoneCounts(state, ZONES), { a: 1, b: 0 }, `counted in zone a at poll ${state.poll}`);
  }
  t.equal(arrived, 0, 'no arrival when X comes back');
});

t.test('X reboots while Y hears d faintly and zone b a little louder: no move out and back', async (t) => {
  const rebooting = [poll('silent', -85, 'empty'), poll('silent', -85, -76)];
  const during = run(rebooting, knownByX(), config);
  t.match(during.state.devices.get('d'), { zone: 'a', ap: 'X', rssiDbm: -50, frozenPolls: 2 }, '-76 against its last -50 at X is no margin: frozen');
  t.same(during.moves, [], 'no move while X is silent');
  const back = run([poll(-50, -85, -76)], during.state, config);
  t.equal(back.state.devices.get('d')?.zone, 'a');
  t.same(back.moves, [], 'no move back');
  t.same(transitionWindow(back.state, config), [], 'no zone transition reported');
});

t.test('X answers without d while Y hears it faintly and zone b a little louder: the dwell rule counts, no move', async (t) => {
  const missing = run([poll('empty', -85, 'empty'), poll('empty', -85, -76)], knownByX(), config);
  t.match(missing.state.devices.get('d'), { zone: 'a', ap: 'X', rssiDbm: -50, challengerZone: 'b', challengerPolls: 1 }, 'a dwell count, not an immediate move');
  t.same(missing.moves, []);
  const back = run([poll(-50, -85, -76)], missing.state, config);
  t.equal(back.state.devices.get('d')?.zone, 'a');
  t.same(back.moves, [], 'no move back');
  t.same(transitionWindow(back.state, config), []);
});

t.test('Y hearing d at least as loud as its last signal at X takes it over at once, in the same zone', async (t) => {
  const outcome = applyPoll(knownByX(), { aps: poll('silent', -50, 'empty') }, config);
  t.match(outcome.state.devices.get('d'), { zone: 'a', ap: 'Y', rssiDbm: -50, frozenPolls: 0 });
  t.same(outcome.moves, []);
});

t.test('d roamed from X to Y: after absentPolls missed rows it is known by Y, so a reboot of Y freezes it', async (t) => {
  const roamed = run(Array.from({ length: config.absentPolls }, () => poll('empty', -60, 'empty')), knownByX(), config);
  t.match(roamed.state.devices.get('d'), { zone: 'a', ap: 'Y', rssiDbm: -60, absentPolls: 0 }, 'taken over by Y on the absentPolls-th missed row');
  t.same(roamed.moves, []);
  const yReboots = run([poll('empty', 'silent', 'empty'), poll('empty', 'silent', 'empty')], roamed.state, config);
  t.match(yReboots.state.devices.get('d'), { zone: 'a', ap: 'Y', frozenPolls: 2 }, 'frozen behind Y, not gone');
});

t.test('X silent up to the frozen ceiling while Y hears d faintly: Y takes it over, counted in zone a, no arrival', async (t) => {
  const short = run(Array.from({ length: config.frozenPolls - 1 }, () => poll('silent', -85, 'empty')), knownByX(), config);
  t.match(short.state.devices.get('d'), { zone: 'a', ap: 'X', frozenPolls: config.frozenPolls - 1 });
  const ceiling = applyPoll(short.state, { aps: poll('silent', -85, 'empty') }, config);
  t.match(ceiling.state.devices.get('d'), { zone: 'a', ap: 'Y', rssiDbm: -85, frozenPolls: 0 });
  t.match(ceiling.stats, { moved: 0, arrived: 0, expired: 0 });
  t.same(ceiling.removed, []);
});

t.test('X reboots while Y and zone b hear d equally faintly: the tie does not hand d to Y', async (t) => {
  const tie = applyPoll(knownByX(), { aps: poll('silent', -80, -80) }, config);
  t.match(tie.state.devices.get('d'), { zone: 'a', ap: 'X', rssiDbm: -50, frozenPolls: 1 }, 'still known by X, frozen');
  const louder = applyPoll(tie.state, { aps: poll('silent', -80, -80 + config.switchMarginDb) }, config);
  t.equal(louder.state.devices.get('d')?.zone, 'a', 'a margin over -80 is no margin over its last -50 at X');
  t.same([...tie.moves, ...louder.moves], []);
});
