import t from 'tap';
import fc from 'fast-check';
import { applyPoll, emptyTrackerState, frozenCount, transitionWindow, zoneCounts } from '../../../edge/src/zones/tracker.js';
import type { ApObservation, PollOutcome, TrackerConfig, TrackerState } from '../../../edge/src/zones/types.js';
import * as model from './support/reference-tracker.js';

// Two zones with two APs each and one with one, so devices are heard across zones and within one.
const APS = [
  { ap: 'ap-1', zone: 'lobby' },
  { ap: 'ap-2', zone: 'lobby' },
  { ap: 'ap-3', zone: 'cafe' },
  { ap: 'ap-4', zone: 'cafe' },
  { ap: 'ap-5', zone: 'office' },
];
const ZONES = ['lobby', 'cafe', 'office'];
const DEVICES = Array.from({ length: 10 }, (_, i) => `dev-${i}`);

const configArb = fc.record({
  switchPolls: fc.integer({ min: 1, max: 4 }),
  switchMarginDb: fc.integer({ min: 0, max: 12 }),
  frozenPolls: fc.integer({ min: 1, max: 8 }),
  absentPolls: fc.integer({ min: 1, max: 4 }),
  transitionWindowPolls: fc.integer({ min: 1, max: 6 }),
});

// A narrow signal range makes ties and exact margins common; an AP may list a device twice, and now
// and then a signal is not a number, as a broken AP might report.
const rssiArb = fc.oneof(
  { weight: 20, arbitrary: fc.integer({ min: -70, max: -50 }) },
  { weight: 1, arbitrary: fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY) },
);
const pollArb = fc.tuple(
  ...APS.map(({ ap, zone }) =>
    fc.oneof(
      { weight: 1, arbitrary: fc.constant<ApObservation>({ ap, zone, answered: false }) },
      {
        weight: 4,
        arbitrary: fc
          .array(fc.record({ device: fc.constantFrom(...DEVICES), rssiDbm: rssiArb }), { maxLength: 8 })
          .map((stations): ApObservation => ({ ap, zone, answered: true, stations })),
      },
    ),
  ),
);

// A poll names only the APs configured at the time: now and then a reload has left one or two out, so
// devices are left known by an AP that the poll does not name.
const reloadedPollArb = fc
  .tuple(pollArb, fc.uniqueArray(fc.constantFrom(...APS.map((a) => a.ap)), { maxLength: 2 }))
  .map(([aps, leftOut]) => aps.filter((ap) => !leftOut.includes(ap.ap)));

const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

interface Readers {
  zoneCounts: typeof zoneCounts;
  frozenCount: typeof frozenCount;
  transitionWindow: typeof transitionWindow;
}
const TRACKER: Readers = { zoneCounts, frozenCount, transitionWindow };
const MODEL: Readers = model;

/** Everything an outcome says, read with one implementation's readers, in a form free of iteration order. */
function canonical(outcome: PollOutcome, config: TrackerConfig, readers: Readers = TRACKER): string {
  const { state } = outcome;
  return JSON.stringify({
    poll: state.poll,
    devices: [...state.devices].sort(([a], [b]) => byText(a, b)),
    transitions: state.transitions.map((e) => `${e.poll} ${e.from}>${e.to} ${e.count}`).sort(byText),
    changed: [...outcome.changed].sort(byText),
    removed: outcome.removed.map((r) => `${r.device} ${r.reason}`).sort(byText),
    moves: outcome.moves.map((m) => `${m.from}>${m.to} ${m.count}`).sort(byText),
    stats: outcome.stats,
    counts: Object.entries(readers.zoneCounts(state, ZONES)).sort(([a], [b]) => byText(a, b)),
    frozen: readers.frozenCount(state),
    window: readers.transitionWindow(state, config),
  });
}

t.test('the tracker agrees with the reference model, poll for poll', async (t) => {
  let polls = 0;
  let moves = 0;
  let removals = 0;
  let ownApMissed = 0;
  let faintInItsZone = 0;
  fc.assert(
    fc.property(configArb, fc.array(pollArb, { minLength: 1, maxLength: 30 }), (config, sequence) => {
      let state: TrackerState = emptyTrackerState();
      let modelState: TrackerState = model.emptyTrackerState();
      for (const aps of sequence) {
        ownApMissed += missedByOwnApHeardByItsZone(state, aps);
        faintInItsZone += missedByOwnApHeardFaintlyOnlyByItsZone(state, aps);
        const outcome = applyPoll(state, { aps }, config);
        const expected = model.applyPoll(modelState, { aps }, config);
        if (canonical(outcome, config) !== canonical(expected, config, MODEL)) return false;
        state = outcome.state;
        modelState = expected.state;
        polls++;
        moves += outcome.stats.moved;
        removals += outcome.removed.length;
      }
      return true;
    }),
    { numRuns: 400 },
  );
  // the generated polls must exercise the interesting paths, or the agreement says little
  t.ok(moves > 100, `zone moves exercised (${moves} over ${polls} polls)`);
  t.ok(removals > 100, `removals exercised (${removals})`);
  t.ok(ownApMissed > 100, `devices their own AP missed, heard by another AP of their zone and louder elsewhere, exercised (${ownApMissed})`);
  t.ok(faintInItsZone > 100, `devices their own AP missed, heard loudest in their zone more faintly than their last signal, exercised (${faintInItsZone})`);
});

/** The loudest readable signal of device `id` from the answering APs of the zones `inZone` accepts. */
function loudestIn(aps: readonly ApObservation[], id: string, inZone: (zone: string) => boolean): number {
  return Math.max(-Infinity, ...aps.flatMap((ap) => (ap.answered && inZone(ap.zone) ? ap.stations.filter((s) => s.device === id && Number.isFinite(s.rssiDbm)).map((s) => s.rssiDbm) : [])));
}

/**
 * Known devices the AP they are known by did not list (silent, or without their row), heard in their
 * zone at least as loud as anywhere else, but more faintly than their last signal at their own AP.
 */
function missedByOwnApHeardFaintlyOnlyByItsZone(state: TrackerState, aps: readonly ApObservation[]): number {
  let n = 0;
  for (const [id, device] of state.devices) {
    const own = aps.find((ap) => ap.ap === device.ap);
    if (own === undefined || (own.answered && own.stations.some((s) => s.device === id))) continue;
    const itsZone = loudestIn(aps, id, (zone) => zone === device.zone);
    if (itsZone > -Infinity && itsZone < device.rssiDbm && loudestIn(aps, id, (zone) => zone !== device.zone) <= itsZone) n++;
  }
  return n;
}

/**
 * Known devices the AP they are known by did not list (silent, or without their row), heard by another
 * AP of their zone and louder by an AP of another zone.
 */
function missedByOwnApHeardByItsZone(state: TrackerState, aps: readonly ApObservation[]): number {
  let n = 0;
  for (const [id, device] of state.devices) {
    const own = aps.find((ap) => ap.ap === device.ap);
    if (own === undefined || (own.answered && own.stations.some((s) => s.device === id))) continue;
    const itsZone = loudestIn(aps, id, (zone) => zone === device.zone);
    if (itsZone > -Infinity && loudestIn(aps, id, (zone) => zone !== device.zone) > itsZone) n++;
  }
  return n;
}

t.test('the tracker agrees with the reference model when reloads change the window between polls', async (t) => {
  let shrinks = 0;
  let zeros = 0;
  fc.assert(
    fc.property(
      configArb,
      fc.array(fc.tuple(pollArb, fc.integer({ min: 1, max: 6 })), { minLength: 1, maxLength: 30 }),
      (base, sequence) => {
        let state: TrackerState = emptyTrackerState();
        let modelState: TrackerState = model.emptyTrackerState();
        for (const [aps, transitionWindowPolls] of sequence) {
          const config = { ...base, transitionWindowPolls };
          if (transitionWindowPolls < state.transitionWindowPolls) shrinks++;
          const outcome = applyPoll(state, { aps }, config);
          const expected = model.applyPoll(modelState, { aps }, config);
          if (canonical(outcome, config) !== canonical(expected, config, MODEL)) return false;
          zeros += outcome.state.transitions.filter((entry) => entry.count === 0).length;
          state = outcome.state;
          modelState = expected.state;
        }
        return true;
      },
    ),
    { numRuns: 300 },
  );
  t.ok(shrinks > 100, `window shrinks exercised (${shrinks})`);
  t.ok(zeros > 20, `pairs kept as 0 after a shrink exercised (${zeros})`);
});

t.test('the tracker agrees with the reference model when reloads leave APs out of the configuration', async (t) => {
  let orphansHeardElsewhere = 0;
  fc.assert(
    fc.property(configArb, fc.array(reloadedPollArb, { minLength: 1, maxLength: 30 }), (config, sequence) => {
      let state: TrackerState = emptyTrackerState();
      let modelState: TrackerState = model.emptyTrackerState();
      for (const aps of sequence) {
        orphansHeardElsewhere += orphansHeardInAnotherZone(state, aps);
        const outcome = applyPoll(state, { aps }, config);
        const expected = model.applyPoll(modelState, { aps }, config);
        if (canonical(outcome, config) !== canonical(expected, config, MODEL)) return false;
        state = outcome.state;
        modelState = expected.state;
      }
      return true;
    }),
    { numRuns: 300 },
  );
  t.ok(orphansHeardElsewhere > 100, `devices of an AP left out, heard in another zone, exercised (${orphansHeardElsewhere})`);
});

/** Known devices whose AP `aps` does not name, heard by an AP of another zone. */
function orphansHeardInAnotherZone(state: TrackerState, aps: readonly ApObservation[]): number {
  const named = new Set(aps.map((ap) => ap.ap));
  let n = 0;
  for (const [id, device] of state.devices) {
    if (named.has(device.ap)) continue;
    if (aps.some((ap) => ap.answered && ap.zone !== device.zone && ap.stations.some((s) => s.device === id))) n++;
  }
  return n;
}

t.test('the comparison tells different outcomes apart', async (t) => {
  const config: TrackerConfig = { switchPolls: 2, switchMarginDb: 8, frozenPolls: 3, absentPolls: 2, transitionWindowPolls: 3 };
  const aps: ApObservation[] = [{ ap: 'ap-1', zone: 'lobby', answered: true, stations: [{ device: 'd', rssiDbm: -60 }] }];
  const one = applyPoll(emptyTrackerState(), { aps }, config);
  const two = applyPoll(one.state, { aps: [{ ap: 'ap-3', zone: 'cafe', answered: true, stations: [{ device: 'd', rssiDbm: -40 }] }] }, config);
  t.not(canonical(one, config), canonical(two, config));
  t.equal(canonical(one, config), canonical(model.applyPoll(model.emptyTrackerState(), { aps }, config), config, MODEL));
});
