/**
 * The zone tracker's vocabulary. Devices are known only by a keyed hash (see device-key.ts); nothing
 * here ever holds a raw MAC.
 */

/** The tracker's thresholds, all in polls or dB. */
export interface TrackerConfig {
  /**
   * N: consecutive polls in which a new zone hears a device louder than its zone does (or its zone does
   * not hear it) while the AP it is known by answers, before it moves.
   */
  switchPolls: number;
  /** A new zone whose signal beats the incumbent's by at least this many dB takes the device at once. */
  switchMarginDb: number;
  /**
   * A device behind a silent AP is kept (frozen) for `frozenPolls - 1` silent polls in a row, and dropped
   * on the `frozenPolls`-th. Default 30.
   */
  frozenPolls: number;
  /** A device no longer heard while its AP answers is gone after this many consecutive polls. */
  absentPolls: number;
  /** Zone transitions are summed over this many polls. */
  transitionWindowPolls: number;
}

export const DEFAULT_TRACKER_CONFIG: TrackerConfig = Object.freeze({
  switchPolls: 3,
  switchMarginDb: 8,
  frozenPolls: 30,
  absentPolls: 2,
  transitionWindowPolls: 30,
});

/**
 * The signal the tracker gives a station its AP lists without a readable signal (0, out of range or not
 * a number: how some APs write "unknown"). The device is associated, so it is counted; below any real
 * reading (the poller keeps −120…0 dBm), it never wins loudest AP, and no margin is ever measured by it.
 * Finite, so it is stored as it is.
 */
export const UNREADABLE_RSSI_DBM = -999;

/** One device as the tracker remembers it. */
export interface TrackedDevice {
  /** The zone it is counted in. */
  zone: string;
  /**
   * The AP it is known by: the AP of that zone that heard it loudest most recently, or its earlier AP
   * while that one misses it and its zone hears it only more faintly (see tracker.ts).
   */
  ap: string;
  /** That AP's signal, dBm; {@link UNREADABLE_RSSI_DBM} when that AP listed it without a readable one. */
  rssiDbm: number;
  /** The zone it may be moving to, while the dwell rule counts. */
  challengerZone: string | null;
  /** Consecutive polls the challenger has counted toward the dwell rule. */
  challengerPolls: number;
  /** Consecutive polls its AP has been silent and no other AP took it over (see tracker.ts). */
  frozenPolls: number;
  /** Consecutive polls its AP answered without it and no other AP took it over (see tracker.ts). */
  absentPolls: number;
  /** The poll number it was last heard in. */
  lastHeardPoll: number;
}

/** Moves between two zones recorded in one poll. */
export interface TransitionEntry {
  poll: number;
  from: string;
  to: string;
  count: number;
}

/** Everything the tracker knows. Immutable: {@link applyPoll} returns a new state. */
export interface TrackerState {
  /** Polls applied so far. */
  poll: number;
  /** By device id (a keyed hash). */
  devices: ReadonlyMap<string, TrackedDevice>;
  /**
   * Moves of the last `transitionWindowPolls` polls, and one poll more. An entry with count 0 stands for
   * a pair that fell out of a window that shrank, so that it is reported once with 0 all the same.
   */
  transitions: readonly TransitionEntry[];
  /**
   * The transition window, in polls, of the poll that made this state (0 before the first poll, or when
   * loaded from a store that did not record it). The next poll compares its window with it.
   */
  transitionWindowPolls: number;
}

/** One station seen by one AP, already identified by its keyed hash. */
export interface DeviceSighting {
  device: string;
  /** dBm; anything that is not a finite reading above {@link UNREADABLE_RSSI_DBM} is taken as unreadable. */
  rssiDbm: number;
}

/** What one AP said in one poll: its stations, or silence (failed or timed out). */
export type ApObservation =
  | { ap: string; zone: string; answered: true; stations: readonly DeviceSighting[] }
  | { ap: string; zone: string; answered: false };

/** One poll of every AP. */
export interface PollObservation {
  aps: readonly ApObservation[];
}

/** Why a device left the tracker. */
export type RemovalReason = 'gone' | 'expired';

/** Two zones, in the order a device moves between them. */
export interface ZonePair {
  from: string;
  to: string;
}

/** The number of devices that moved between two zones. */
export interface ZonePairCount extends ZonePair {
  count: number;
}

/** What one poll did to the state. */
export interface PollOutcome {
  state: TrackerState;
  /** Device ids whose record is new or changed (what a store must write). */
  changed: string[];
  /**
   * Device ids removed, with why (what a store must delete). A device dropped at the frozen ceiling while
   * another zone hears it is admitted there in the same poll: it is in `changed`, not here.
   */
  removed: Array<{ device: string; reason: RemovalReason }>;
  /** Moves made in this poll, by zone pair. */
  moves: ZonePairCount[];
  stats: PollStats;
}

export interface PollStats {
  heard: number;
  arrived: number;
  moved: number;
  frozen: number;
  gone: number;
  expired: number;
}
