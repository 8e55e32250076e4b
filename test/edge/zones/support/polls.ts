/**
 * The tracker tests' vocabulary: a two-zone building, observations as plain data, and a run of polls
 * through applyPoll collecting every move.
 */
import { applyPoll, emptyTrackerState } from '../../../../edge/src/zones/tracker.js';
import type { ApObservation, TrackerConfig, TrackerState, ZonePairCount } from '../../../../edge/src/zones/types.js';

export const config: TrackerConfig = { switchPolls: 3, switchMarginDb: 8, frozenPolls: 5, absentPolls: 2, transitionWindowPolls: 4 };
export const ZONES = ['lobby', 'cafe'];

/** An AP that answered, hearing each device (by id) at its dBm. */
export const heard = (ap: string, zone: string, stations: Record<string, number>): ApObservation => ({
  ap,
  zone,
  answered: true,
  stations: Object.entries(stations).map(([device, rssiDbm]) => ({ device, rssiDbm })),
});

/** An AP that did not answer. */
export const silent = (ap: string, zone: string): ApObservation => ({ ap, zone, answered: false });

/** Applies `polls` in turn from `start`; the state after the last and every move on the way. */
export function run(polls: ApObservation[][], start: TrackerState = emptyTrackerState(), cfg = config): { state: TrackerState; moves: ZonePairCount[] } {
  let state = start;
  const moves: ZonePairCount[] = [];
  for (const aps of polls) {
    const outcome = applyPoll(state, { aps }, cfg);
    state = outcome.state;
    moves.push(...outcome.moves);
  }
  return { state, moves };
}
