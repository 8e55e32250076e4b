/**
 * How this process was started, as far as memory goes: the systemd unit bounds the V8 heap through
 * NODE_OPTIONS, which the single executable honours; `version --verbose` and the collector's start-up log
 * show what it became.
 */
import { isSea } from 'node:sea';
import { getHeapStatistics } from 'node:v8';

const MB = 1024 * 1024;

/** How this process was started, as far as memory goes. */
export interface RuntimeFacts {
  singleExecutable: boolean;
  /** NODE_OPTIONS as the process received it; undefined when not set. */
  nodeOptions: string | undefined;
  /** V8's heap_size_limit: the old-space limit plus the young generation (three semi-spaces), MB. */
  heapLimitMb: number;
  rssMb: number;
}

export function runtimeFacts(): RuntimeFacts {
  const nodeOptions = process.env.NODE_OPTIONS?.trim();
  return {
    singleExecutable: isSea(),
    nodeOptions: nodeOptions ? nodeOptions : undefined,
    heapLimitMb: getHeapStatistics().heap_size_limit / MB,
    rssMb: process.memoryUsage.rss() / MB,
  };
}
