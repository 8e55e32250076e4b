/**
 * The zone tracker: a pure state machine from one poll of every AP to who is counted where.
 *
 * Rules, per device, in each poll:
 *
 * - **Loudest AP, counted once.** All sightings of a device across APs are folded into one: the loudest
 *   (ties go to the smaller AP name, so AP order never matters). A device is one record, so it is counted
 *   in exactly one zone however many APs list it. A station listed without a readable signal is
 *   associated all the same, so it counts; it is heard at {@link UNREADABLE_RSSI_DBM}, below any real
 *   reading, so any AP that reads its signal is louder.
 * - **Hysteresis.** A new (challenger) zone takes a device only when
 *   1. its loudest signal beats the incumbent zone's by at least `switchMarginDb` (the incumbent zone's
 *      loudest this poll; when the AP the device is known by did not hear it, being silent or missing its
 *      row, the louder of that and the last signal that AP gave, so that a fainter AP of the same zone
 *      never speaks for it); an unreadable signal on either side is no reading to measure a margin by, or
 *   2. it has been the device's zone for `switchPolls` consecutive polls: each poll, the AP the device is
 *      known by answered, and the new zone heard the device louder than the incumbent zone did (or the
 *      incumbent zone did not hear it).
 *   Jitter that makes another zone louder for fewer than `switchPolls` polls in a row never moves a
 *   device, and an equal signal in both zones never moves it; but a device that the new zone keeps
 *   hearing louder is not held in its old zone for ever because the lead is below the margin.
 * - **Frozen, not expired.** A device unheard this poll whose AP is silent (failed, timed out, rebooting)
 *   keeps its zone and is still counted for `frozenPolls - 1` such polls in a row; it is dropped on the
 *   `frozenPolls`-th. A device that other zones hear while its own AP is silent is frozen too, also when
 *   another AP of its zone hears it more faintly: it only moves by the margin rule. At the frozen
 *   ceiling it is dropped from its zone like any frozen device, and the zone that hears it then admits
 *   it as an arrival, not a transition: a sighting there was never a move that met the margin or the
 *   dwell rule. A device heard only in its own zone, by an AP fainter than its last signal at its own
 *   AP, is frozen as well and stays known by its own AP (so an AP reboot neither drops it nor lets the
 *   faint signal measure a later margin); at the frozen ceiling that fainter AP takes it over, in the
 *   same zone, so with no move and no change in the counts. One at least as loud takes it over at once.
 * - **Absence.** A device unheard while its AP answers is still counted for `absentPolls - 1` polls (one
 *   missed station-table row is not a departure) and is gone on the `absentPolls`-th. Heard meanwhile in
 *   its zone only by an AP fainter than its last signal at its own AP, it is counted all the same, still
 *   known by its own AP, and on the `absentPolls`-th such poll that fainter AP takes it over.
 * - **An AP no longer configured.** A device last heard by an AP that this poll does not name (renamed,
 *   or removed with its zone, by a reload or before a restart) has nobody left to speak for its zone:
 *   heard loudest in another zone (even while another AP of its zone still hears it faintly), it is
 *   dropped from its zone and arrives where it is heard, as at the frozen ceiling. Nobody walked: a
 *   renamed AP put in another zone, or a zone removed, is no move. Unheard, it is gone as an absent
 *   device is.
 * - **Transitions.** Each move is recorded as (from, to) and summed over the last
 *   `transitionWindowPolls` polls. An arrival is not a transition. A pair that leaves the window is
 *   reported once more with 0, also when the window shrank between two polls (a reload or restart with
 *   a longer poll interval or a shorter transition window). The collector repeats that 0 until a batch
 *   carrying it is delivered (pairs-at-ingest.ts).
 */
import type {
  ApObservation,
  DeviceSighting,
  PollObservation,
  PollOutcome,
  PollStats,
  RemovalReason,
  TrackedDevice,
  TrackerConfig,
  TrackerState,
  TransitionEntry,
  ZonePair,
  ZonePairCount,
} from './types.js';
import { UNREADABLE_RSSI_DBM } from './types.js';

/** A tracker that has seen nothing. */
export function emptyTrackerState(): TrackerState {
  return { poll: 0, devices: new Map(), transitions: [], transitionWindowPolls: 0 };
}

/** The signal the tracker compares: a finite reading above the sentinel, or the sentinel. */
function comparableSignal(rssiDbm: number): number {
  return Number.isFinite(rssiDbm) && rssiDbm > UNREADABLE_RSSI_DBM ? rssiDbm : UNREADABLE_RSSI_DBM;
}

/** Whether `challenger` beats `incumbent` by the margin; an unreadable signal on either side never does. */
function beatsByMargin(challenger: number, incumbent: number, config: TrackerConfig): boolean {
  return challenger > UNREADABLE_RSSI_DBM && incumbent > UNREADABLE_RSSI_DBM && challenger - incumbent >= config.switchMarginDb;
}

/**
 * The loudest sighting of one device in one poll, folded over every AP that lists it, with what the
 * tracker knew of the device before the poll.
 */
interface Heard {
  ap: string;
  zone: string;
  rssiDbm: number;
  /** The device's record before this poll; undefined for a device seen for the first time. */
  current: TrackedDevice | undefined;
  /** The loudest AP of the device's incumbent zone that heard it; undefined when that zone did not. */
  incumbentAp: string | undefined;
  /** That AP's signal (meaningful only when `incumbentAp` is set). */
  incumbentRssiDbm: number;
  /** Whether the AP the device is known by listed it this poll, in its incumbent zone. */
  ownApHeard: boolean;
}

/**
 * The one table a poll builds. While the sightings are folded, each device's slot holds its {@link Heard};
 * then each slot is overwritten in place by the device's next record, so the same table (one hash table
 * per poll, not three) becomes the next state's devices.
 */
type Slot = Heard | TrackedDevice;

/**
 * Folds every AP's stations into one loudest sighting per device (ties go to the smaller AP name).
 * Answers how many of the devices heard were already known.
 */
function foldSightings(aps: readonly ApObservation[], known: ReadonlyMap<string, TrackedDevice>, into: Map<string, Slot>): number {
  let knownHeard = 0;
  for (const observation of aps) {
    if (!observation.answered) continue;
    const { ap, zone, stations } = observation;
    for (let i = 0; i < stations.length; i++) {
      const station = stations[i] as DeviceSighting;
      const device = station.device;
      const rssiDbm = comparableSignal(station.rssiDbm);
      let entry = into.get(device) as Heard | undefined;
      if (entry === undefined) {
        const current = known.get(device);
        if (current !== undefined) knownHeard++;
        entry = { ap, zone, rssiDbm, current, incumbentAp: undefined, incumbentRssiDbm: 0, ownApHeard: false };
        into.set(device, entry);
      } else if (rssiDbm > entry.rssiDbm || (rssiDbm === entry.rssiDbm && ap < entry.ap)) {
        entry.ap = ap;
        entry.zone = zone;
        entry.rssiDbm = rssiDbm;
      }
      if (entry.current !== undefined && zone === entry.current.zone) {
        if (ap === entry.current.ap) entry.ownApHeard = true;
        const bestAp = entry.incumbentAp;
        if (bestAp === undefined || rssiDbm > entry.incumbentRssiDbm || (rssiDbm === entry.incumbentRssiDbm && ap < bestAp)) {
          entry.incumbentRssiDbm = rssiDbm;
          entry.incumbentAp = ap;
        }
      }
    }
  }
  return knownHeard;
}

/** Every record is built here, so all share one shape (no spreads, no optional fields). */
function tracked(
  zone: string,
  ap: string,
  rssiDbm: number,
  challengerZone: string | null,
  challengerPolls: number,
  frozenPolls: number,
  absentPolls: number,
  lastHeardPoll: number,
): TrackedDevice {
  return { zone, ap, rssiDbm, challengerZone, challengerPolls, frozenPolls, absentPolls, lastHeardPoll };
}

function settled(zone: string, ap: string, rssiDbm: number, poll: number): TrackedDevice {
  return tracked(zone, ap, rssiDbm, null, 0, 0, 0, poll);
}

/**
 * The next record of a known device that was heard this poll. It moved when the zone differs; it is
 * frozen when `frozenPolls` is above 0. 'expired' when heard loudest in another zone and either at the
 * frozen ceiling or known by an AP this poll does not name: it is dropped from its zone, and the caller
 * admits it where it is heard.
 */
function stepHeard(current: TrackedDevice, heard: Heard, aps: PolledAps, poll: number, config: TrackerConfig): TrackedDevice | 'expired' {
  if (heard.zone === current.zone) return stepHeardInZone(current, heard.ownApHeard, heard.ap, heard.rssiDbm, aps, poll, config);
  // Its AP is no longer configured (renamed, perhaps into the zone that hears it loudest now): another AP
  // of its zone that still hears it faintly is no reason to hold it there or to count a move.
  if (!aps.named.has(current.ap)) return 'expired';
  if (heard.incumbentAp !== undefined) {
    // Both zones hear it. The loudest sighting is in the new zone, so the lead is 0 (a tie the AP names
    // broke, which is no reason to move) or more.
    const lead = heard.rssiDbm - heard.incumbentRssiDbm;
    if (lead <= 0) return stepHeardInZone(current, heard.ownApHeard, heard.incumbentAp, heard.incumbentRssiDbm, aps, poll, config);
    if (heard.ownApHeard) {
      if (beatsByMargin(heard.rssiDbm, heard.incumbentRssiDbm, config)) return settled(heard.zone, heard.ap, heard.rssiDbm, poll);
      return dwell(current, heard, heard.incumbentAp, heard.incumbentRssiDbm, poll, config);
    }
  }
  // Its own AP did not hear it (silent, or it missed the row). A fainter AP of its zone is no measure of
  // where it is: its last signal at its own AP still is, as in a zone with one AP.
  const incumbentDbm = heard.incumbentAp === undefined ? current.rssiDbm : Math.max(heard.incumbentRssiDbm, current.rssiDbm);
  const beatsIncumbent = beatsByMargin(heard.rssiDbm, incumbentDbm, config);
  if (aps.silent.has(current.ap)) {
    // Its own AP cannot speak for it: keep it where it was unless the margin says otherwise, until the ceiling.
    if (beatsIncumbent) return settled(heard.zone, heard.ap, heard.rssiDbm, poll);
    const frozenPolls = current.frozenPolls + 1;
    if (frozenPolls >= config.frozenPolls) return 'expired';
    return tracked(current.zone, current.ap, current.rssiDbm, null, 0, frozenPolls, 0, poll);
  }
  if (beatsIncumbent) return settled(heard.zone, heard.ap, heard.rssiDbm, poll);
  // Its own AP answered without it: the dwell rule counts.
  return dwell(current, heard, current.ap, current.rssiDbm, poll, config);
}

/**
 * The next record of a known device its own zone heard loudest this poll (or as loud as another zone),
 * by `ap` at `rssiDbm`. When the AP it is known by is configured but did not hear it, and `ap` hears it
 * more faintly than its last signal there, `ap` does not speak for it: it is kept known by its own AP at
 * that signal (so later margins are measured by it), and frozen (its AP silent) or absent (its AP
 * answered without it) as if unheard, only still counted. Where its own AP would let go of it (the
 * frozen ceiling, the `absentPolls`-th missed row) it is known by `ap` from then on: the same zone, so
 * no move and no change in the counts. A sighting at least as loud as its last signal there speaks for it.
 */
function stepHeardInZone(
  current: TrackedDevice,
  ownApHeard: boolean,
  ap: string,
  rssiDbm: number,
  aps: PolledAps,
  poll: number,
  config: TrackerConfig,
): TrackedDevice {
  if (ownApHeard || rssiDbm >= current.rssiDbm || !aps.named.has(current.ap)) return settled(current.zone, ap, rssiDbm, poll);
  if (aps.silent.has(current.ap)) {
    const frozenPolls = current.frozenPolls + 1;
    if (frozenPolls >= config.frozenPolls) return settled(current.zone, ap, rssiDbm, poll);
    return tracked(current.zone, current.ap, current.rssiDbm, null, 0, frozenPolls, current.absentPolls, poll);
  }
  const absentPolls = current.absentPolls + 1;
  if (absentPolls >= config.absentPolls) return settled(current.zone, ap, rssiDbm, poll);
  return tracked(current.zone, current.ap, current.rssiDbm, null, 0, 0, absentPolls, poll);
}

/**
 * One more poll in which the new zone has the device: it moves on the `switchPolls`-th in a row, and
 * until then stays counted in its zone, known there by `ap` at `rssiDbm`.
 */
function dwell(current: TrackedDevice, heard: Heard, ap: string, rssiDbm: number, poll: number, config: TrackerConfig): TrackedDevice {
  const challengerPolls = current.challengerZone === heard.zone ? current.challengerPolls + 1 : 1;
  if (challengerPolls >= config.switchPolls) return settled(heard.zone, heard.ap, heard.rssiDbm, poll);
  return tracked(current.zone, ap, rssiDbm, heard.zone, challengerPolls, 0, 0, poll);
}

/** The next record of a known device nobody heard this poll, or why it is removed. */
function stepUnheard(current: TrackedDevice, silentAps: ReadonlySet<string>, config: TrackerConfig): TrackedDevice | RemovalReason {
  // An AP no longer configured is not silent: its devices are absent, and gone after absentPolls.
  if (silentAps.has(current.ap)) {
    const frozenPolls = current.frozenPolls + 1;
    if (frozenPolls >= config.frozenPolls) return 'expired';
    return tracked(current.zone, current.ap, current.rssiDbm, null, 0, frozenPolls, current.absentPolls, current.lastHeardPoll);
  }
  const absentPolls = current.absentPolls + 1;
  if (absentPolls >= config.absentPolls) return 'gone';
  return tracked(current.zone, current.ap, current.rssiDbm, null, 0, 0, absentPolls, current.lastHeardPoll);
}

/** The APs one poll names: every AP configured, each answered or silent. */
interface PolledAps {
  named: ReadonlySet<string>;
  silent: ReadonlySet<string>;
}

function polledAps(observation: PollObservation): PolledAps {
  const named = new Set<string>();
  const silent = new Set<string>();
  for (const ap of observation.aps) {
    named.add(ap.ap);
    if (!ap.answered) silent.add(ap.ap);
  }
  return { named, silent };
}

/** Counts per (from, to) zone pair in first-seen order, keyed by from then to: no key strings are built. */
class PairCounts {
  readonly list: ZonePairCount[] = [];
  private readonly byFrom = new Map<string, Map<string, ZonePairCount>>();

  has(from: string, to: string): boolean {
    return this.byFrom.get(from)?.has(to) === true;
  }

  add(from: string, to: string, count: number): void {
    let byTo = this.byFrom.get(from);
    if (byTo === undefined) {
      byTo = new Map();
      this.byFrom.set(from, byTo);
    }
    const pair = byTo.get(to);
    if (pair !== undefined) {
      pair.count += count;
      return;
    }
    const created = { from, to, count };
    byTo.set(to, created);
    this.list.push(created);
  }
}

/**
 * Applies one poll of every AP to the tracker state. Pure: the input state is not modified, and the same
 * inputs always give the same outcome. This is the tracker's whole hot path: it builds one hash table
 * (the next state's devices) and one small record per device, and nothing per sighting.
 *
 * @example
 * const { state, moves } = applyPoll(emptyTrackerState(), {
 *   aps: [{ ap: 'ap-1', zone: 'lobby', answered: true, stations: [{ device: 'k1', rssiDbm: -52 }] }],
 * }, DEFAULT_TRACKER_CONFIG);
 * zoneCounts(state, ['lobby']); // { lobby: 1 }
 */
export function applyPoll(state: TrackerState, observation: PollObservation, config: TrackerConfig): PollOutcome {
  const poll = state.poll + 1;
  const known = state.devices;
  const aps = polledAps(observation);

  const slots = new Map<string, Slot>();
  const knownHeard = foldSightings(observation.aps, known, slots);
  const changed: string[] = [];
  const removed: Array<{ device: string; reason: RemovalReason }> = [];
  const movesByPair = new PairCounts();
  const stats: PollStats = { heard: slots.size, arrived: 0, moved: 0, frozen: 0, gone: 0, expired: 0 };

  function settle(id: string, current: TrackedDevice, next: TrackedDevice): void {
    slots.set(id, next);
    changed.push(id);
    if (next.frozenPolls > 0) stats.frozen++;
    if (next.zone !== current.zone) {
      stats.moved++;
      movesByPair.add(current.zone, next.zone, 1);
    }
  }

  // Every heard device: overwrite its sighting by its next record (the table's keys do not change).
  slots.forEach((slot, id) => {
    const heard = slot as Heard;
    const current = heard.current;
    const next = current && stepHeard(current, heard, aps, poll, config);
    if (current !== undefined && next !== undefined && next !== 'expired') {
      settle(id, current, next);
      return;
    }
    // New, or dropped from a zone that could not hear it (at the frozen ceiling, or its AP no longer
    // configured): it arrives where it is heard (its stored row is overwritten, so it is not in `removed`).
    slots.set(id, settled(heard.zone, heard.ap, heard.rssiDbm, poll));
    changed.push(id);
    stats.arrived++;
    if (next === 'expired') stats.expired++;
  });
  // Known devices nobody heard; when every known device was heard there are none to look for.
  if (knownHeard < known.size) {
    known.forEach((current, id) => {
      if (slots.has(id)) return;
      const next = stepUnheard(current, aps.silent, config);
      if (typeof next === 'string') {
        removed.push({ device: id, reason: next });
        if (next === 'gone') stats.gone++;
        else stats.expired++;
      } else {
        settle(id, current, next);
      }
    });
  }

  const transitions = keptTransitions(state, poll, config.transitionWindowPolls);
  const moves = movesByPair.list;
  for (const move of moves) transitions.push({ poll, from: move.from, to: move.to, count: move.count });

  // Every slot now holds a TrackedDevice.
  const devices = slots as Map<string, TrackedDevice>;
  return { state: { poll, devices, transitions, transitionWindowPolls: config.transitionWindowPolls }, changed, removed, moves, stats };
}

/**
 * The moves of `state` to keep at `poll`: the window's, and one poll more, so transitionWindow can tell
 * which pairs just fell out of it. When the window shrank since the state's poll, the moves between the
 * two windows' starts would go at once, never reported with 0: each such pair the kept moves do not hold
 * is kept as one entry of 0 at the oldest poll kept, which transitionWindow reports once.
 */
function keptTransitions(state: TrackerState, poll: number, windowPolls: number): TransitionEntry[] {
  const oldest = poll - windowPolls;
  // the oldest poll the state's own report counted (its window ended at poll - 1)
  const reportedFrom = poll - state.transitionWindowPolls;
  const kept: TransitionEntry[] = [];
  let fellOut: TransitionEntry[] | undefined;
  for (const entry of state.transitions) {
    if (entry.poll >= oldest) kept.push(entry);
    else if (entry.poll >= reportedFrom) (fellOut ??= []).push(entry);
  }
  if (fellOut === undefined) return kept;
  const keptPairs = new PairCounts();
  for (const entry of kept) keptPairs.add(entry.from, entry.to, 0);
  for (const entry of fellOut) {
    if (keptPairs.has(entry.from, entry.to)) continue;
    keptPairs.add(entry.from, entry.to, 0);
    kept.push({ poll: oldest, from: entry.from, to: entry.to, count: 0 });
  }
  return kept;
}

/**
 * The state with every device counted in the zone its AP belongs to now, for a state saved under an
 * older configuration: an AP moved to another zone carries its devices along at once. Nobody walked, so
 * it is no move (no transition, no dwell). A device whose AP is no longer configured is left as it is:
 * the next poll admits it where it is heard, with no move, or drops it as absent (see applyPoll).
 * Answers the state unchanged when nothing differs.
 *
 * @example
 * rezoneToConfig(saved, new Map([['ap-1', 'cafe']])); // { state, rezoned: 12 }
 */
export function rezoneToConfig(state: TrackerState, apZones: ReadonlyMap<string, string>): { state: TrackerState; rezoned: number } {
  const devices = new Map(state.devices);
  let rezoned = 0;
  for (const [id, device] of state.devices) {
    const zone = apZones.get(device.ap);
    if (zone === undefined || zone === device.zone) continue;
    devices.set(id, { ...device, zone, challengerZone: null, challengerPolls: 0 });
    rezoned++;
  }
  return rezoned === 0 ? { state, rezoned } : { state: { ...state, devices }, rezoned };
}

/**
 * Devices counted per zone. Every zone named in `zones` is present (0 when empty); a device is counted
 * once, in its own zone.
 */
export function zoneCounts(state: TrackerState, zones: readonly string[]): Record<string, number> {
  // A Map hashes each zone string once; a plain object would look every key up in the string table.
  const byZone = new Map<string, number>();
  for (const zone of zones) byZone.set(zone, 0);
  for (const device of state.devices.values()) byZone.set(device.zone, (byZone.get(device.zone) ?? 0) + 1);
  const counts: Record<string, number> = {};
  for (const [zone, count] of byZone) counts[zone] = count;
  return counts;
}

/** Devices frozen behind a silent AP right now. */
export function frozenCount(state: TrackerState): number {
  let n = 0;
  for (const device of state.devices.values()) if (device.frozenPolls > 0) n++;
  return n;
}

/**
 * Moves per zone pair over the transition window, ending at the state's poll. A pair that had moves in
 * the window ending one poll earlier but has none now is reported once with 0, so a reader sees it fall
 * (PairsAtIngest reports it again while no batch carrying that 0 was delivered).
 */
export function transitionWindow(state: TrackerState, config: TrackerConfig): ZonePairCount[] {
  const oldest = state.poll - config.transitionWindowPolls;
  const pairs = new PairCounts();
  for (const entry of state.transitions) {
    const now = entry.poll > oldest;
    // in the window that ended one poll earlier: a pair seen only there is reported once, with 0
    const before = entry.poll >= oldest && entry.poll < state.poll;
    if (now || before) pairs.add(entry.from, entry.to, now ? entry.count : 0);
  }
  return pairs.list.sort(byZonePair);
}

/** The order transitions are reported in: by origin, then by destination. */
export function byZonePair(a: ZonePair, b: ZonePair): number {
  return a.from === b.from ? a.to.localeCompare(b.to) : a.from.localeCompare(b.from);
}
