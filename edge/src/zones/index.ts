/**
 * Zones: the pure tracker (one poll in, the next state out), device identity by keyed hash, and the
 * store that keeps the state across restarts.
 */
export { applyPoll, emptyTrackerState, frozenCount, transitionWindow, zoneCounts } from './tracker.js';
export { DEFAULT_TRACKER_CONFIG } from './types.js';
export type {
  ApObservation,
  DeviceSighting,
  PollObservation,
  PollOutcome,
  PollStats,
  TrackedDevice,
  TrackerConfig,
  TrackerState,
  ZonePairCount,
} from './types.js';
export { canonicalMac, createDeviceHasher, keyFingerprint, loadOrCreateDeviceKey, DeviceKeyError } from './device-key.js';
export type { DeviceHasher } from './device-key.js';
export { openSqliteZoneStore } from './store.js';
export type { ZoneStore } from './store.js';
export { resumeSavedState } from './resume.js';
export type { Resumed, StopLength } from './resume.js';
export { observe } from './observe.js';
