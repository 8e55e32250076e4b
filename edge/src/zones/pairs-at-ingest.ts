/**
 * The zone pairs the ingest may still hold at a non-zero count. The tracker reports a pair whose moves
 * left the transition window once with 0 (transitionWindow), and no tick after that names the pair. If
 * the batch of that one tick is lost (the ingest unreachable or refusing it, the wall clock not set, a
 * stop between the parts of a large tick), the last value the ingest stored and published for the pair
 * stays its old count for good: yesterday's moves read as today's. So the collector keeps each pair a
 * tick reports until a delivered batch carries it with 0, and each tick reports 0 for the pairs kept
 * that its window no longer holds.
 *
 * A pair is kept from the tick that reports it, before its batch is sent: a batch that timed out may
 * have been stored all the same, and an extra 0 for a pair the ingest never received is harmless where
 * a missing one is not. A pair the tracker itself reports with 0 (fallen out of the window, a window
 * shrunk, a start over after a long stop) is kept too, so that its 0 is repeated as well when lost.
 */
import { byZonePair } from './tracker.js';
import type { ZonePair, ZonePairCount } from './types.js';

export class PairsAtIngest {
  private readonly toByFrom = new Map<string, Set<string>>();

  /**
   * Pairs kept as a store saved them.
   *
   * @example
   * const atIngest = PairsAtIngest.of(zones.pairsAtIngest());
   */
  static of(pairs: Iterable<ZonePair>): PairsAtIngest {
    const kept = new PairsAtIngest();
    for (const { from, to } of pairs) kept.keep(from, to);
    return kept;
  }

  /**
   * A tick's transitions as they are to be reported: its own, each pair of them kept, and 0 for each
   * pair kept that they do not hold, in transitionWindow's order.
   *
   * @example
   * atIngest.report([]); // [{ from: 'lobby', to: 'cafe', count: 0 }] while lobby→cafe is not known delivered as 0
   */
  report(transitions: readonly ZonePairCount[]): ZonePairCount[] {
    const reported = new Map<string, Set<string>>();
    for (const { from, to } of transitions) {
      this.keep(from, to);
      let tos = reported.get(from);
      if (tos === undefined) reported.set(from, (tos = new Set()));
      tos.add(to);
    }
    const fallen: ZonePairCount[] = [];
    for (const [from, tos] of this.toByFrom) {
      for (const to of tos) if (reported.get(from)?.has(to) !== true) fallen.push({ from, to, count: 0 });
    }
    return fallen.length === 0 ? [...transitions] : [...transitions, ...fallen].sort(byZonePair);
  }

  /** A batch was delivered (accepted, or kept in the ledger alone): each pair it carried with 0 is settled. */
  delivered(transitions: Iterable<ZonePairCount>): void {
    for (const { from, to, count } of transitions) {
      if (count !== 0) continue;
      const tos = this.toByFrom.get(from);
      tos?.delete(to);
      if (tos?.size === 0) this.toByFrom.delete(from);
    }
  }

  /** The pairs kept, for the zone store to save. */
  list(): ZonePair[] {
    const pairs: ZonePair[] = [];
    for (const [from, tos] of this.toByFrom) for (const to of tos) pairs.push({ from, to });
    return pairs;
  }

  private keep(from: string, to: string): void {
    let tos = this.toByFrom.get(from);
    if (tos === undefined) this.toByFrom.set(from, (tos = new Set()));
    tos.add(to);
  }
}
