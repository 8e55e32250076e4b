/**
 * The poller alone in its own process, as a gateway runs it (bundled, plain `node`, no TypeScript
 * loader): the benchmark sends `tick` lines on stdin and reads one JSON line per tick; `exit` makes it
 * print its peak RSS and V8 heap limit (proof of the NODE_OPTIONS it ran with) and leave.
 *
 * argv[2]: JSON {ports: number[], stations: number, maxRepetitions: number, dialectDir: string, timeoutMs: number}
 */
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import { loadDialects } from '../../../edge/src/poll/dialects.js';
import { createPoller } from '../../../edge/src/poll/poller.js';
import type { AccessPoint } from '../../../edge/src/poll/types.js';

interface RunnerOptions {
  ports: number[];
  stations: number;
  maxRepetitions: number;
  dialectDir: string;
  timeoutMs: number;
}

function main(): void {
  const options = JSON.parse(process.argv[2] ?? '{}') as RunnerOptions;
  const poller = createPoller({ dialects: loadDialects(options.dialectDir), maxRepetitions: options.maxRepetitions });
  const aps: AccessPoint[] = options.ports.map((port, i) => ({
    name: `ap-${i}`,
    zone: `zone-${i % 10}`,
    dialect: 'aruba-aos',
    target: { transport: 'snmp', host: '127.0.0.1', port, version: '2c', community: 'public' },
  }));
  const lines = createInterface({ input: process.stdin });
  let queue = Promise.resolve();
  lines.on('line', (line) => {
    queue = queue.then(async () => {
      if (line === 'exit') {
        await poller.close();
        const heapLimitMb = getHeapStatistics().heap_size_limit / (1024 * 1024);
        process.stdout.write(`${JSON.stringify({ maxRssMb: process.resourceUsage().maxRSS / 1024, heapLimitMb })}\n`);
        lines.close();
        return;
      }
      const started = performance.now();
      const results = await poller.pollAll(aps, options.timeoutMs);
      const ms = performance.now() - started;
      const bad = results.filter((r) => !r.ok || r.stations.length !== options.stations);
      process.stdout.write(`${JSON.stringify({ ms, bad: bad.length, sample: bad[0] })}\n`);
    });
  });
}

main();
