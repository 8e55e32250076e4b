/**
 * The zone tracker as first written: a plain, allocation-heavy transcription of the rules (see
 * edge/src/zones/tracker.ts for them). It is kept as the model the optimised tracker must agree with,
 * poll for poll (test/edge/zones/tracker-model.test.ts). Do not optimise it.
 */
import type {
  ApObservation,
  PollObservation,
  PollOutcome,
  PollStats,
  RemovalReason,
  TrackedDevice,
  TrackerConfig,
  TrackerState,
  TransitionEntry,
  ZonePairCount,
} from '../../../../edge/src/zones/types.js';
import { UNREADABLE_RSSI_DBM } from '../../../../edge/src/zones/types.js';

/** A tracker that has seen nothing. */
export function emptyTrackerState(): TrackerState {
  return { poll: 0, devices: new Map(), transitions: [], transitionWindowPolls: 0 };
}

/** Whether a signal is a reading at all (not the unreadable sentinel). */
function readable(rssiDbm: number): boolean {
  return rssiDbm > UNREADABLE_RSSI_DBM;
}

/** The margin rule; it needs a reading on both sides. */
function beatsByMargin(challenger: number, incumbent: number, config: TrackerConfig): boolean {
  return readable(challenger) && readable(incumbent) && challenger - incumbent >= config.switchMarginDb;
}

/** The loudest sighting of one device in one poll, and its zone's best signal when it has a zone. */
interface Heard {
  ap: string;
  zone: string;
  rssiDbm: number;
  /** The zone the device is counted in before this poll, if any. */
  incumbentZone: string | undefined;
  /** The loudest signal from the device's incumbent zone, if that zone heard it. */
  incumbentRssiDbm: number | undefined;
  incumbentAp: string | undefined;
  /** Whether the AP the device is known by listed it this poll, in its incumbent zone. */
  ownApHeard: boolean;
}

/** Folds every AP's stations into one loudest sighting per device. */
function heardDevices(aps: readonly ApObservation[], known: ReadonlyMap<string, TrackedDevice>): Map<string, Heard> {
  const heard = new Map<string, Heard>();
  for (const observation of aps) {
    if (!observation.answered) continue;
    const { ap, zone } = observation;
    for (const station of observation.stations) {
      const device = station.device;
      // a station listed without a readable signal still counts, quieter than any reading
      const rssiDbm = Number.isFinite(station.rssiDbm) && station.rssiDbm > UNREADABLE_RSSI_DBM ? station.rssiDbm : UNREADABLE_RSSI_DBM;
      let entry = heard.get(device);
      if (entry === undefined) {
        entry = { ap, zone, rssiDbm, incumbentZone: known.get(device)?.zone, incumbentRssiDbm: undefined, incumbentAp: undefined, ownApHeard: false };
        heard.set(device, entry);
      } else if (rssiDbm > entry.rssiDbm || (rssiDbm === entry.rssiDbm && ap < entry.ap)) {
        entry.ap = ap;
        entry.zone = zone;
        entry.rssiDbm = rssiDbm;
      }
      if (zone === entry.incumbentZone) {
        if (ap === known.get(device)?.ap) entry.ownApHeard = true;
        const best = entry.incumbentRssiDbm;
        if (best === undefined || rssiDbm > best || (rssiDbm === best && ap < (entry.incumbentAp as string))) {
          entry.incumbentRssiDbm = rssiDbm;
          entry.incumbentAp = ap;
        }
      }
    }
  }
  return heard;
}

function settled(zone: string, ap: string, rssiDbm: number, poll: number): TrackedDevice {
  return { zone, ap, rssiDbm, challengerZone: null, challengerPolls: 0, frozenPolls: 0, absentPolls: 0, lastHeardPoll: poll };
}

/**
 * The next record of a known device that was heard this poll. It moved when the zone differs; it is
 * frozen when `frozenPolls` is above 0; 'expired' heard loudest in another zone, at the frozen ceiling or
 * when the poll does not name its AP (no longer configured).
 */
function stepHeard(
  current: TrackedDevice,
  heard: Heard,
  namedAps: ReadonlySet<string>,
  silentAps: ReadonlySet<string>,
  poll: number,
  config: TrackerConfig,
): TrackedDevice | 'expired' {
  if (heard.zone === current.zone) return heardInItsZone(current, heard, heard.ap, heard.rssiDbm, namedAps, silentAps, poll, config);
  // Nobody is left to speak for its zone, whatever its other APs hear: dropped from it, and admitted
  // where it is heard.
  if (!namedAps.has(current.ap)) return 'expired';
  if (heard.incumbentRssiDbm !== undefined) {
    const incumbentAp = heard.incumbentAp ?? current.ap;
    const lead = heard.rssiDbm - heard.incumbentRssiDbm;
    // Both zones hear it: a tie keeps it.
    if (lead <= 0) return heardInItsZone(current, heard, incumbentAp, heard.incumbentRssiDbm, namedAps, silentAps, poll, config);
    if (heard.ownApHeard) {
      // Its own AP heard it too: a clear margin moves it, a smaller lead counts toward the dwell.
      if (beatsByMargin(heard.rssiDbm, heard.incumbentRssiDbm, config)) return settled(heard.zone, heard.ap, heard.rssiDbm, poll);
      const challengerPolls = current.challengerZone === heard.zone ? current.challengerPolls + 1 : 1;
      if (challengerPolls >= config.switchPolls) return settled(heard.zone, heard.ap, heard.rssiDbm, poll);
      return { ...current, ap: incumbentAp, rssiDbm: heard.incumbentRssiDbm, challengerZone: heard.zone, challengerPolls, frozenPolls: 0, absentPolls: 0, lastHeardPoll: poll };
    }
  }
  // Its own AP did not hear it: the margin is measured by its last signal there, or by a louder AP of its
  // zone this poll; then it is as in a zone with one AP.
  const incumbentRssiDbm = Math.max(heard.incumbentRssiDbm ?? UNREADABLE_RSSI_DBM, current.rssiDbm);
  const beatsIncumbent = beatsByMargin(heard.rssiDbm, incumbentRssiDbm, config);
  if (silentAps.has(current.ap)) {
    // Its own AP cannot speak for it: keep it where it was unless the margin says otherwise; at the
    // ceiling it is dropped, and the zone that hears it admits it.
    const frozenPolls = current.frozenPolls + 1;
    if (beatsIncumbent) return settled(heard.zone, heard.ap, heard.rssiDbm, poll);
    if (frozenPolls >= config.frozenPolls) return 'expired';
    return { ...current, challengerZone: null, challengerPolls: 0, frozenPolls, absentPolls: 0, lastHeardPoll: poll };
  }
  if (beatsIncumbent) return settled(heard.zone, heard.ap, heard.rssiDbm, poll);
  // Its own AP answered without it: the dwell rule counts.
  const challengerPolls = current.challengerZone === heard.zone ? current.challengerPolls + 1 : 1;
  if (challengerPolls >= config.switchPolls) return settled(heard.zone, heard.ap, heard.rssiDbm, poll);
  return { ...current, challengerZone: heard.zone, challengerPolls, frozenPolls: 0, absentPolls: 0, lastHeardPoll: poll };
}

/**
 * The next record of a known device its zone heard loudest (or as loud as another zone), by `ap` at
 * `rssiDbm`. While its own AP is configured and missed it, an AP fainter than its last signal there does
 * not speak for it: it is frozen or absent as if unheard, still counted and known by its own AP, and
 * where it would be dropped that fainter AP takes it over instead.
 */
function heardInItsZone(
  current: TrackedDevice,
  heard: Heard,
  ap: string,
  rssiDbm: number,
  namedAps: ReadonlySet<string>,
  silentAps: ReadonlySet<string>,
  poll: number,
  config: TrackerConfig,
): TrackedDevice {
  const speaksForIt = heard.ownApHeard || rssiDbm >= current.rssiDbm || !namedAps.has(current.ap);
  if (speaksForIt) return settled(current.zone, ap, rssiDbm, poll);
  const unheard = stepUnheard(current, silentAps, config);
  if (typeof unheard === 'string') return settled(current.zone, ap, rssiDbm, poll);
  return { ...unheard, lastHeardPoll: poll };
}

/** The next record of a known device nobody heard this poll, or why it is removed. */
function stepUnheard(current: TrackedDevice, silentAps: ReadonlySet<string>, config: TrackerConfig): TrackedDevice | RemovalReason {
  if (silentAps.has(current.ap)) {
    const frozenPolls = current.frozenPolls + 1;
    if (frozenPolls >= config.frozenPolls) return 'expired';
    return { ...current, challengerZone: null, challengerPolls: 0, frozenPolls };
  }
  const absentPolls = current.absentPolls + 1;
  if (absentPolls >= config.absentPolls) return 'gone';
  return { ...current, challengerZone: null, challengerPolls: 0, frozenPolls: 0, absentPolls };
}

function pairKey(from: string, to: string): string {
  return `${from}\u0000${to}`;
}

/**
 * Applies one poll of every AP to the tracker state. Pure: the input state is not modified, and the same
 * inputs always give the same outcome. This is the tracker's whole hot path.
 *
 * @example
 * const { state, moves } = applyPoll(emptyTrackerState(), {
 *   aps: [{ ap: 'ap-1', zone: 'lobby', answered: true, stations: [{ device: 'k1', rssiDbm: -52 }] }],
 * }, DEFAULT_TRACKER_CONFIG);
 * zoneCounts(state, ['lobby']); // { lobby: 1 }
 */
export function applyPoll(state: TrackerState, observation: PollObservation, config: TrackerConfig): PollOutcome {
  const poll = state.poll + 1;
  const namedAps = new Set(observation.aps.map((ap) => ap.ap));
  const silentAps = new Set(observation.aps.filter((ap) => !ap.answered).map((ap) => ap.ap));
  const heard = heardDevices(observation.aps, state.devices);

  const devices = new Map<string, TrackedDevice>();
  const changed: string[] = [];
  const removed: Array<{ device: string; reason: RemovalReason }> = [];
  const movesByPair = new Map<string, ZonePairCount>();
  const stats: PollStats = { heard: heard.size, arrived: 0, moved: 0, frozen: 0, gone: 0, expired: 0 };

  for (const [id, current] of state.devices) {
    const sighting = heard.get(id);
    const next = sighting ? stepHeard(current, sighting, namedAps, silentAps, poll, config) : stepUnheard(current, silentAps, config);
    if (sighting && next === 'expired') {
      // dropped from its zone, and at once an arrival where it is heard: the stored row stays
      devices.set(id, settled(sighting.zone, sighting.ap, sighting.rssiDbm, poll));
      changed.push(id);
      stats.expired++;
      stats.arrived++;
      continue;
    }
    if (typeof next === 'string') {
      removed.push({ device: id, reason: next });
      if (next === 'gone') stats.gone++;
      else stats.expired++;
      continue;
    }
    devices.set(id, next);
    changed.push(id);
    if (next.frozenPolls > 0) stats.frozen++;
    if (next.zone !== current.zone) {
      stats.moved++;
      const key = pairKey(current.zone, next.zone);
      const pair = movesByPair.get(key);
      if (pair) pair.count++;
      else movesByPair.set(key, { from: current.zone, to: next.zone, count: 1 });
    }
  }
  for (const [id, sighting] of heard) {
    if (state.devices.has(id)) continue;
    devices.set(id, settled(sighting.zone, sighting.ap, sighting.rssiDbm, poll));
    changed.push(id);
    stats.arrived++;
  }

  const moves = [...movesByPair.values()];
  // One poll more than the window is kept, so transitionWindow can tell which pairs just fell out of it.
  const oldest = poll - config.transitionWindowPolls;
  const transitions: TransitionEntry[] = state.transitions.filter((entry) => entry.poll >= oldest);
  // A window shorter than the state's drops moves the last report counted: each such pair not kept
  // otherwise is kept once as 0 at the oldest poll kept, so it is reported once with 0.
  const keptPairs = new Set(transitions.map((entry) => pairKey(entry.from, entry.to)));
  for (const entry of state.transitions) {
    const key = pairKey(entry.from, entry.to);
    if (entry.poll >= oldest || entry.poll < poll - state.transitionWindowPolls || keptPairs.has(key)) continue;
    keptPairs.add(key);
    transitions.push({ poll: oldest, from: entry.from, to: entry.to, count: 0 });
  }
  for (const move of moves) transitions.push({ poll, ...move });

  return { state: { poll, devices, transitions, transitionWindowPolls: config.transitionWindowPolls }, changed, removed, moves, stats };
}

/**
 * Devices counted per zone. Every zone named in `zones` is present (0 when empty); a device is counted
 * once, in its own zone.
 */
export function zoneCounts(state: TrackerState, zones: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const zone of zones) counts[zone] = 0;
  for (const device of state.devices.values()) counts[device.zone] = (counts[device.zone] ?? 0) + 1;
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
 * the window ending one poll earlier but has none now is reported once with 0, so a reader sees it fall.
 */
export function transitionWindow(state: TrackerState, config: TrackerConfig): ZonePairCount[] {
  const now = new Map<string, ZonePairCount>();
  const before = new Set<string>();
  const oldest = state.poll - config.transitionWindowPolls;
  for (const entry of state.transitions) {
    const key = pairKey(entry.from, entry.to);
    if (entry.poll > oldest) {
      const pair = now.get(key);
      if (pair) pair.count += entry.count;
      else now.set(key, { from: entry.from, to: entry.to, count: entry.count });
    }
    if (entry.poll >= oldest && entry.poll < state.poll) before.add(key);
  }
  const out = [...now.values()];
  for (const entry of state.transitions) {
    const key = pairKey(entry.from, entry.to);
    if (before.has(key) && !now.has(key)) {
      now.set(key, { from: entry.from, to: entry.to, count: 0 });
      out.push({ from: entry.from, to: entry.to, count: 0 });
    }
  }
  return out.sort((a, b) => (a.from === b.from ? a.to.localeCompare(b.to) : a.from.localeCompare(b.from)));
}
