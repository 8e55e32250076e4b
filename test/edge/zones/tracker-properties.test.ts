import t from 'tap';
import fc from 'fast-check';
import { applyPoll, emptyTrackerState, zoneCounts } from '../../../edge/src/zones/tracker.js';
import type { ApObservation, TrackerConfig, TrackerState } from '../../../edge/src/zones/types.js';

const APS = [
  { ap: 'ap-1', zone: 'lobby' },
  { ap: 'ap-2', zone: 'lobby' },
  { ap: 'ap-3', zone: 'cafe' },
  { ap: 'ap-4', zone: 'office' },
];
const ZONES = ['lobby', 'cafe', 'office'];
const DEVICES = Array.from({ length: 12 }, (_, i) => `dev-${i}`);

const configArb = fc.record({
  switchPolls: fc.integer({ min: 1, max: 5 }),
  switchMarginDb: fc.integer({ min: 1, max: 20 }),
  frozenPolls: fc.integer({ min: 2, max: 40 }),
  absentPolls: fc.integer({ min: 1, max: 4 }),
  transitionWindowPolls: fc.integer({ min: 1, max: 10 }),
});

/** One poll: each AP answers (with any subset of devices, at any signal) or is silent. */
const pollArb = fc.tuple(
  ...APS.map(({ ap, zone }) =>
    fc.oneof(
      { weight: 1, arbitrary: fc.constant<ApObservation>({ ap, zone, answered: false }) },
      {
        weight: 5,
        arbitrary: fc
          .uniqueArray(fc.record({ device: fc.constantFrom(...DEVICES), rssiDbm: fc.integer({ min: -95, max: -25 }) }), {
            selector: (s) => s.device,
            maxLength: DEVICES.length,
          })
          .map((stations): ApObservation => ({ ap, zone, answered: true, stations })),
      },
    ),
  ),
);

const sum = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);

t.test('a device is never counted twice, whatever the APs say', async (t) => {
  fc.assert(
    fc.property(configArb, fc.array(pollArb, { minLength: 1, maxLength: 40 }), (config, polls) => {
      let state = emptyTrackerState();
      const everSeen = new Set<string>();
      for (const aps of polls) {
        state = applyPoll(state, { aps }, config).state;
        const heardNow = new Set<string>();
        for (const ap of aps) if (ap.answered) for (const s of ap.stations) heardNow.add(s.device);
        for (const d of heardNow) everSeen.add(d);
        const counts = zoneCounts(state, ZONES);
        if (sum(counts) !== state.devices.size) return false;
        if (state.devices.size > everSeen.size) return false;
        for (const d of heardNow) if (!state.devices.has(d)) return false;
        // Summing the APs' lists would count a device once per AP; the tracker must not.
        if (sum(counts) > everSeen.size) return false;
      }
      return true;
    }),
    { numRuns: 300 },
  );
  t.pass('held for every generated sequence');
});

/** Settles each device in a zone: heard by one AP only, loudly. */
function settledState(placement: Array<{ device: string; apIndex: number; rssi: number }>, config: TrackerConfig): TrackerState {
  const aps: ApObservation[] = APS.map(({ ap, zone }, i) => ({
    ap,
    zone,
    answered: true,
    stations: placement.filter((p) => p.apIndex === i).map((p) => ({ device: p.device, rssiDbm: p.rssi })),
  }));
  return applyPoll(emptyTrackerState(), { aps }, config).state;
}

const placementArb = fc.uniqueArray(
  fc.record({ device: fc.constantFrom(...DEVICES), apIndex: fc.integer({ min: 0, max: APS.length - 1 }), rssi: fc.integer({ min: -80, max: -35 }) }),
  { selector: (p) => p.device, minLength: 1 },
);

t.test('jitter below the margin that favours another zone for fewer than switchPolls polls in a row never moves a device', async (t) => {
  fc.assert(
    fc.property(
      configArb,
      placementArb,
      fc.array(fc.array(fc.tuple(fc.integer({ min: -6, max: 6 }), fc.integer({ min: 0, max: 1000 }), fc.integer({ min: 0, max: 3 })), { minLength: 12, maxLength: 12 }), {
        minLength: 1,
        maxLength: 30,
      }),
      (config, placement, jitterPolls) => {
        let state = settledState(placement, config);
        const before = zoneCounts(state, ZONES);
        // Polls in a row in which another zone heard each device louder than its own zone did.
        const louderInARow = placement.map(() => 0);
        for (const jitter of jitterPolls) {
          const stations = APS.map(() => [] as Array<{ device: string; rssiDbm: number }>);
          placement.forEach((p, i) => {
            const [own, spread, otherOffset] = jitter[i] ?? [0, 0, 0];
            const ownRssi = p.rssi + own;
            stations[p.apIndex]!.push({ device: p.device, rssiDbm: ownRssi });
            // Another zone's AP hears it too, never by the margin or more above its own zone, and louder
            // than its own zone for fewer than switchPolls polls in a row.
            const other = (p.apIndex + 1 + otherOffset) % APS.length;
            if (APS[other]!.zone === APS[p.apIndex]!.zone) {
              louderInARow[i] = 0;
              return;
            }
            let lead = config.switchMarginDb - 0.01 - (spread / 1000) * 30;
            if (lead > 0 && louderInARow[i]! + 1 >= config.switchPolls) lead = -0.01 - (spread / 1000) * 30;
            louderInARow[i] = lead > 0 ? louderInARow[i]! + 1 : 0;
            stations[other]!.push({ device: p.device, rssiDbm: ownRssi + lead });
          });
          const aps = APS.map(({ ap, zone }, i): ApObservation => ({ ap, zone, answered: true, stations: stations[i]! }));
          const outcome = applyPoll(state, { aps }, config);
          if (outcome.moves.length > 0) return false;
          state = outcome.state;
          for (const p of placement) if (state.devices.get(p.device)?.zone !== APS[p.apIndex]!.zone) return false;
        }
        return JSON.stringify(zoneCounts(state, ZONES)) === JSON.stringify(before);
      },
    ),
    { numRuns: 200 },
  );
  t.pass('held for every generated jitter');
});

t.test('an AP reboot shorter than frozenPolls keeps every count', async (t) => {
  fc.assert(
    fc.property(
      configArb,
      placementArb,
      fc.integer({ min: 0, max: APS.length - 1 }),
      fc.integer({ min: 1, max: 39 }),
      fc.integer({ min: 0, max: 100 }),
      (config, placement, rebooting, length, faintness) => {
        fc.pre(length < config.frozenPolls);
        let state = settledState(placement, config);
        const before = zoneCounts(state, ZONES);
        const normal = (silentIndex: number | null): ApObservation[] =>
          APS.map(({ ap, zone }, i): ApObservation => {
            if (i === silentIndex) return { ap, zone, answered: false };
            const own = placement.filter((p) => p.apIndex === i).map((p) => ({ device: p.device, rssiDbm: p.rssi }));
            // While an AP is down, a neighbour may hear its devices faintly (below the margin).
            const faint =
              silentIndex === null
                ? []
                : placement
                    .filter((p) => p.apIndex === silentIndex && (i + faintness) % 2 === 0)
                    .map((p) => ({ device: p.device, rssiDbm: p.rssi + config.switchMarginDb - 1 - (faintness % 10) }));
            return { ap, zone, answered: true, stations: [...own, ...faint] };
          });
        for (let i = 0; i < length; i++) {
          state = applyPoll(state, { aps: normal(rebooting) }, config).state;
          if (JSON.stringify(zoneCounts(state, ZONES)) !== JSON.stringify(before)) return false;
        }
        state = applyPoll(state, { aps: normal(null) }, config).state;
        return JSON.stringify(zoneCounts(state, ZONES)) === JSON.stringify(before);
      },
    ),
    { numRuns: 300 },
  );
  t.pass('held for every generated reboot');
});

t.test('an AP reboot shorter than frozenPolls, other APs hearing its devices now and then more faintly, keeps every count and moves nobody', async (t) => {
  fc.assert(
    fc.property(
      configArb,
      placementArb,
      fc.integer({ min: 0, max: APS.length - 1 }),
      fc.array(fc.array(fc.integer({ min: 0, max: 1000 }), { minLength: APS.length, maxLength: APS.length }), { minLength: 1, maxLength: 39 }),
      (config, placement, rebooting, hearingPolls) => {
        fc.pre(hearingPolls.length < config.frozenPolls);
        let state = settledState(placement, config);
        const before = zoneCounts(state, ZONES);
        // In each poll each other AP hears some of the rebooting AP's devices, fainter than it did: in its
        // zone or another, that AP never speaks for them, nor does another zone's lead make a margin.
        const poll = (hearing: readonly number[] | null): ApObservation[] =>
          APS.map(({ ap, zone }, i): ApObservation => {
            if (hearing !== null && i === rebooting) return { ap, zone, answered: false };
            const own = placement.filter((p) => p.apIndex === i).map((p) => ({ device: p.device, rssiDbm: p.rssi }));
            const seed = hearing?.[i] ?? 0;
            const faint =
              hearing === null
                ? []
                : placement.flatMap((p, j) =>
                    p.apIndex === rebooting && (seed + j) % 3 === 0 ? [{ device: p.device, rssiDbm: p.rssi - 1 - (Math.floor((seed + j) / 3) % 10) }] : [],
                  );
            return { ap, zone, answered: true, stations: [...own, ...faint] };
          });
        for (const hearing of [...hearingPolls, null]) {
          const outcome = applyPoll(state, { aps: poll(hearing) }, config);
          state = outcome.state;
          if (outcome.moves.length > 0) return false;
          if (JSON.stringify(zoneCounts(state, ZONES)) !== JSON.stringify(before)) return false;
        }
        return true;
      },
    ),
    { numRuns: 300 },
  );
  t.pass('held for every generated reboot');
});

t.test('after the frozen ceiling, devices of a silent AP are gone', async (t) => {
  fc.assert(
    fc.property(configArb, placementArb, fc.integer({ min: 0, max: APS.length - 1 }), fc.integer({ min: 0, max: 10 }), (config, placement, dead, extra) => {
      let state = settledState(placement, config);
      const behindDead = placement.filter((p) => p.apIndex === dead).map((p) => p.device);
      const aps = APS.map(({ ap, zone }, i): ApObservation =>
        i === dead
          ? { ap, zone, answered: false }
          : { ap, zone, answered: true, stations: placement.filter((p) => p.apIndex === i).map((p) => ({ device: p.device, rssiDbm: p.rssi })) },
      );
      for (let i = 1; i <= config.frozenPolls + extra; i++) {
        state = applyPoll(state, { aps }, config).state;
        const present = behindDead.filter((d) => state.devices.has(d)).length;
        if (i < config.frozenPolls && present !== behindDead.length) return false;
        if (i >= config.frozenPolls && present !== 0) return false;
      }
      return zoneCounts(state, ZONES)[APS[dead]!.zone] === placement.filter((p) => APS[p.apIndex]!.zone === APS[dead]!.zone && p.apIndex !== dead).length;
    }),
    { numRuns: 300 },
  );
  t.pass('held for every generated outage');
});
