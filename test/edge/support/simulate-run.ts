/**
 * Runs the edge's `simulate` as its end-to-end tests do: the command IO captured, the simulated building
 * it started kept, and every device MAC an AP reported collected (for the "no identifier leaves the
 * gateway" checks).
 */
import { simulate, type SimulateOptions, type SimulationSummary } from '../../../edge/src/commands/simulate.js';
import { startSimulatedBuilding } from '../../../edge/src/simulate/index.js';
import type { SimulatedBuilding } from '../../../edge/src/simulate/types.js';
import type { Poller } from '../../../edge/src/poll/types.js';
import { captureIo } from './cli-io.js';

export interface SimulateRun {
  exitCode: number;
  summary: SimulationSummary;
  /** The lines the command printed, and its error lines. */
  out: string[];
  err: string[];
  /** The building simulate started (undefined if it never started one). */
  building: SimulatedBuilding | undefined;
  /** Every MAC the APs answered with, over the run. */
  macsSeen: Set<string>;
}

/**
 * Runs `simulate` with `options`; `onStart` sees the building once started, before the first tick
 * (to make an AP reboot, say).
 *
 * @example
 * const { exitCode, out, building, macsSeen } = await runSimulate({ ...options, output: 'json' });
 */
export async function runSimulate(options: SimulateOptions, onStart?: (building: SimulatedBuilding) => void): Promise<SimulateRun> {
  const macsSeen = new Set<string>();
  let building: SimulatedBuilding | undefined;
  const { out, err, io } = captureIo();
  const { exitCode, summary } = await simulate(options, io, {
    startBuilding: async (buildingOptions) => {
      building = await startSimulatedBuilding(buildingOptions);
      onStart?.(building);
      return building;
    },
    wrapPoller: (poller: Poller): Poller => ({
      async pollAll(aps, timeoutMs) {
        const results = await poller.pollAll(aps, timeoutMs);
        for (const r of results) if (r.ok) for (const s of r.stations) macsSeen.add(s.mac);
        return results;
      },
      close: () => poller.close(),
    }),
  });
  return { exitCode, summary, out, err, building, macsSeen };
}
