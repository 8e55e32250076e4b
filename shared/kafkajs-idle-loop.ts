/**
 * Stops kafkajs 2.2.4 from spinning a 1 ms timer on every idle broker connection. Import it before
 * any kafkajs client is made; every module of this repository that makes one imports it.
 *
 * kafkajs's request queue re-checks its pending requests from a timer. When nothing is pending and the
 * broker has not throttled the connection, the delay it computes is negative (its "throttled until" is
 * -1), so the timer fires at once and schedules itself again: about 900 checks a second per connection,
 * measured at about 8 % of a core for one idle producer on this project's machines (upstream issues
 * tulios/kafkajs#1556 and #1704; the fix, PR #1667, is not released). Every service holds several
 * connections, so idle services burned CPU the busy ones needed.
 *
 * The check is skipped exactly when it has nothing to do: no request is pending and the connection is
 * not throttled. A request that cannot be sent at once is pending, so its check is still scheduled (10
 * ms later, or when the throttle ends); a request in flight checks the queue again when it is answered.
 * A kafkajs that has no such method is left alone.
 */
import { createRequire } from 'node:module';

interface RequestQueueState {
  pending: unknown[];
  throttledUntil: number;
  scheduleCheckPendingRequests(): void;
}

const require = createRequire(import.meta.url);
const PATCHED = Symbol.for('lintel.kafkajs.idleLoop');

/** The request queue's prototype, if this kafkajs has one where 2.2.4 keeps it. */
function requestQueuePrototype(): (RequestQueueState & { [PATCHED]?: true }) | undefined {
  try {
    const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as { prototype?: RequestQueueState };
    return typeof RequestQueue.prototype?.scheduleCheckPendingRequests === 'function' ? RequestQueue.prototype : undefined;
  } catch {
    return undefined;
  }
}

/** True when the queue would only re-check itself for nothing: nothing pending, not throttled. */
export function idleCheck(queue: Pick<RequestQueueState, 'pending' | 'throttledUntil'>, now = Date.now()): boolean {
  return queue.pending.length === 0 && queue.throttledUntil <= now;
}

/** Installs the fix once per process. True when kafkajs's request queue is patched. */
export function stopIdleRequestQueueLoop(): boolean {
  const prototype = requestQueuePrototype();
  if (prototype === undefined) return false;
  if (prototype[PATCHED]) return true;
  const schedule = prototype.scheduleCheckPendingRequests;
  prototype.scheduleCheckPendingRequests = function (this: RequestQueueState) {
    if (idleCheck(this)) return;
    schedule.call(this);
  };
  prototype[PATCHED] = true;
  return true;
}

stopIdleRequestQueueLoop();
