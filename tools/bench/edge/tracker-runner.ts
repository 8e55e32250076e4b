/**
 * The tracker benchmark alone in its own process, as a gateway runs the tracker (bundled, plain `node`,
 * the node flags the benchmark gives it): prints the figures as one JSON line and leaves.
 */
import { benchTracker } from './tracker.js';

process.stdout.write(`${JSON.stringify(benchTracker())}\n`);
