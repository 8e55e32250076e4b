/**
 * A saved tracker state taken up again at a start. The tracker counts in polls, and a stopped collector
 * polls nothing: taken up as it is after a night's outage, the state would go on from the evening's
 * last poll as if no time had passed, reporting the evening's moves as moves of the current window and
 * counting the evening's devices until they age out. The wall-clock time saved with the state tells
 * how long the collector was stopped.
 */
import type { TrackerState, TransitionEntry } from './types.js';

/** How long the collector was stopped, as far as the saved time and the wall clock tell. */
export type StopLength =
  /** No longer than the transition window: the state is taken up as it is, as if no poll was missed. */
  | 'within-window'
  /** Longer than the transition window. */
  | 'longer-than-window'
  /** Not known: the state was saved without a time (by a collector from before it was recorded). */
  | 'unknown'
  /** Not known: the state is dated after the wall clock (a clock that went back, or one not set yet). */
  | 'clock-went-back';

export interface ResumeClock {
  /** When the saved state's poll ran (epoch ms), as the store kept it; undefined when not known. */
  savedAt: number | undefined;
  /** The wall clock now (epoch ms). */
  now: number;
  pollIntervalMs: number;
  /** The transition window of the configuration now, in polls: it lasts this many poll intervals. */
  transitionWindowPolls: number;
}

export interface Resumed {
  state: TrackerState;
  stop: StopLength;
  /**
   * Whether the saved devices and moves were dropped: then the store still holds devices the state
   * does not, and its next save must remove them (SaveOptions.complete).
   */
  startedOver: boolean;
}

/**
 * How long the collector was stopped, against a transition window of `windowMs`.
 *
 * @example
 * stopLength(Date.UTC(2026, 0, 1, 18), Date.UTC(2026, 0, 2, 8), 300_000); // 'longer-than-window'
 */
export function stopLength(savedAt: number | undefined, now: number, windowMs: number): StopLength {
  if (savedAt === undefined) return 'unknown';
  const stoppedMs = now - savedAt;
  if (stoppedMs < 0) return 'clock-went-back';
  return stoppedMs <= windowMs ? 'within-window' : 'longer-than-window';
}

/**
 * The state to count on from after a stop. A stop within the transition window is taken up as it is:
 * the moves before it are still moves of the window, and the devices are counted, frozen or aged as if
 * no poll was missed. After a longer stop the state starts over (see {@link startedOver}): its moves are
 * outside any window that ends now, and its devices are yesterday's, not who is there now.
 *
 * A stop of unknown length starts over too. Taken as a short one, a state from before a long outage
 * would be reported as the present, into readings kept for days; taken as a long one, a short restart
 * counts from the APs' answers at once (devices missed by one poll, or behind an AP still booting,
 * arrive again when heard), and the moves of its last window are reported 0 a window early. The second
 * mistake is brief and visibly so; the first is false data. It happens at most once per state file
 * saved without a time, or when the wall clock went back.
 *
 * @example
 * const { state, stop } = resumeSavedState(store.load(), { savedAt: store.savedAt(), now: Date.now(), pollIntervalMs: 10_000, transitionWindowPolls: 30 });
 */
export function resumeSavedState(saved: TrackerState, clock: ResumeClock): Resumed {
  const stop = stopLength(clock.savedAt, clock.now, clock.pollIntervalMs * clock.transitionWindowPolls);
  if (stop === 'within-window') return { state: saved, stop, startedOver: false };
  return { state: startedOver(saved, clock.transitionWindowPolls), stop, startedOver: true };
}

/**
 * `saved` as a fresh start has it: no devices (the first poll admits whoever the APs hear, as arrivals)
 * and no moves. What stays is the poll count, and, for each zone pair the last report before the stop
 * counted, one entry of 0 that the first poll reports once and then drops, so that a reader sees the
 * pair fall, as when moves age out of the window. It sits at the oldest poll of the first poll's
 * window of `windowPolls`, where the tracker keeps a pair that a shrunk window dropped (keptTransitions).
 *
 * @example
 * startedOver(saved, 30).devices.size; // 0
 */
export function startedOver(saved: TrackerState, windowPolls: number): TrackerState {
  // The last report counted the moves after this poll; all the saved ones when its window is unknown
  // (a 0 reported a second time is harmless, one never reported leaves a stale count).
  const reportedAfter = saved.transitionWindowPolls > 0 ? saved.poll - saved.transitionWindowPolls : Number.NEGATIVE_INFINITY;
  const oldestOfFirstWindow = saved.poll + 1 - windowPolls;
  const toByFrom = new Map<string, Set<string>>();
  const transitions: TransitionEntry[] = [];
  for (const { poll, from, to, count } of saved.transitions) {
    if (count === 0 || poll <= reportedAfter) continue;
    let tos = toByFrom.get(from);
    if (tos === undefined) toByFrom.set(from, (tos = new Set()));
    if (tos.has(to)) continue;
    tos.add(to);
    transitions.push({ poll: oldestOfFirstWindow, from, to, count: 0 });
  }
  return { poll: saved.poll, devices: new Map(), transitions, transitionWindowPolls: saved.transitionWindowPolls };
}
