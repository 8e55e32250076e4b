/**
 * subscribe_building and unsubscribe_building: the only way a client reaches a room of its choice, and
 * only after the membership check against the building directory.
 */
import type { Socket } from 'socket.io';
import type { BuildingDirectory } from '../../shared/directory.js';
import { DirectoryError } from '../../shared/directory.js';
import { describeError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { SocketIdentity } from './handshake.js';
import type { RelayMetrics, SubscriptionRejection } from './metrics.js';
import { buildingRoom, holdsAnyDomain, isValidBuildingId, MAX_BUILDING_ID_LENGTH } from './rooms.js';

/** The acknowledgement of subscribe_building. `reason` only when refused. */
export interface SubscribeAck {
  subscribed: boolean;
  buildingId: string;
  reason?: SubscriptionRejection;
}

export type SubscriptionDecision = { subscribed: true } | { subscribed: false; reason: SubscriptionRejection; detail: string };

/**
 * Whether an identity may join a building's room: the directory names the building's domains and the
 * account must hold one of them. A failed or timed-out lookup refuses with `lookup_failed`.
 */
export async function decideSubscription(directory: BuildingDirectory, identity: SocketIdentity, buildingId: string): Promise<SubscriptionDecision> {
  let domains: string[];
  try {
    domains = await directory.domainsOf(buildingId, identity.claimsHeader);
  } catch (err) {
    const detail = err instanceof DirectoryError ? err.code : describeError(err);
    return { subscribed: false, reason: 'lookup_failed', detail };
  }
  if (!holdsAnyDomain(identity.domains, domains)) {
    return { subscribed: false, reason: 'forbidden', detail: domains.length === 0 ? 'building has no domains' : 'no shared domain' };
  }
  return { subscribed: true };
}

type Ack = (ack: SubscribeAck) => void;

/** Splits socket.io event arguments into the first argument and the acknowledgement, if any. */
function argumentsOf(args: unknown[]): { value: unknown; ack: Ack | undefined } {
  const last = args[args.length - 1];
  const ack = typeof last === 'function' ? (last as Ack) : undefined;
  return { value: ack && args.length === 1 ? undefined : args[0], ack };
}

/** A bounded echo of what the client sent as a building id, for the refusal's ack. */
function echoOf(value: unknown): string {
  return typeof value === 'string' ? value.slice(0, MAX_BUILDING_ID_LENGTH) : '';
}

export interface SubscriptionDeps {
  directory: BuildingDirectory;
  metrics: RelayMetrics;
  logger: Logger;
}

/** Directory lookups one socket may have in flight at once; later calls wait their turn, in order. */
export const MAX_LOOKUPS_IN_FLIGHT = 16;

/**
 * subscribe_building calls one socket may have waiting on a lookup at once: in flight, waiting for one of
 * the lookup slots, or queued behind an earlier call for the same building. A client re-subscribing every
 * building it shows on connect sends them in one loop, and the relay handles them all before any lookup
 * settles (a cached answer included), so the bound is well above what a dashboard holds. More are refused
 * with `lookup_failed` without a lookup, so one client cannot open thousands of directory calls (failed
 * lookups are never cached, and every distinct building id is a lookup of its own) nor queue them without
 * bound.
 */
export const MAX_PENDING_SUBSCRIPTIONS = MAX_LOOKUPS_IN_FLIGHT + 256;

/**
 * Registers the two room events on a connected socket. Calls for the same building run in the order the
 * client sent them, so an unsubscribe sent while a subscribe's lookup is pending still wins.
 */
export function attachSubscriptions(socket: Socket, identity: SocketIdentity, deps: SubscriptionDeps): void {
  const { directory, metrics, logger } = deps;
  const queues = new Map<string, Promise<void>>();
  /** subscribe_building calls waiting on a lookup, in flight or queued. */
  let lookupsWaiting = 0;
  let lookupsInFlight = 0;
  /** Calls waiting for a lookup slot, first come first served; each is told whether it got one. */
  const slotWaiters: Array<(granted: boolean) => void> = [];
  /** Buildings whose queue ends with a leave that has not run yet. */
  const leaveQueued = new Set<string>();

  function inOrder(buildingId: string, step: () => Promise<void> | void): void {
    const previous = queues.get(buildingId) ?? Promise.resolve();
    const current = previous.then(step).catch((err: unknown) => {
      logger.error({ error: describeError(err), buildingId }, 'room step failed');
    });
    queues.set(buildingId, current);
    void current.then(() => {
      if (queues.get(buildingId) === current) queues.delete(buildingId);
    });
  }

  /** Resolves once this call may ask the directory, or with false if the socket left while it waited. */
  function lookupSlot(): Promise<boolean> {
    if (lookupsInFlight < MAX_LOOKUPS_IN_FLIGHT) {
      lookupsInFlight++;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => slotWaiters.push(resolve));
  }

  function releaseLookupSlot(): void {
    const next = slotWaiters.shift();
    // The slot passes straight to the next waiting call, so the count of lookups in flight stays put.
    if (next) next(true);
    else lookupsInFlight--;
  }

  // A socket that leaves lets go of its waiting calls at once, not one slot at a time as lookups settle.
  socket.once('disconnect', () => {
    for (const waiter of slotWaiters.splice(0)) waiter(false);
  });

  function answer(ack: Ack | undefined, body: SubscribeAck): void {
    if (!ack) return;
    try {
      ack(body);
    } catch (err) {
      logger.debug({ error: describeError(err) }, 'acknowledgement failed');
    }
  }

  function refuse(ack: Ack | undefined, buildingId: string, reason: SubscriptionRejection, detail: string): void {
    metrics.subscriptionsRejected.inc({ reason });
    const fields = { accountId: identity.accountId, buildingId, reason, detail };
    if (reason === 'lookup_failed') logger.warn(fields, 'subscription refused: building directory lookup failed');
    else logger.info(fields, 'subscription refused');
    answer(ack, { subscribed: false, buildingId, reason });
  }

  socket.on('subscribe_building', (...args: unknown[]) => {
    const { value, ack } = argumentsOf(args);
    if (!isValidBuildingId(value)) {
      refuse(ack, echoOf(value), 'forbidden', 'invalid building id');
      return;
    }
    const buildingId = value;
    if (lookupsWaiting >= MAX_PENDING_SUBSCRIPTIONS) {
      // Refused at once, without a lookup and without queueing (so a flood holds nothing), and like any
      // refusal it leaves the room. A subscribe for this building sent earlier may still be pending; its
      // own ack then tells where the socket ends up.
      void Promise.resolve(socket.leave(buildingRoom(buildingId))).then(() =>
        refuse(ack, buildingId, 'lookup_failed', `more than ${MAX_PENDING_SUBSCRIPTIONS} subscriptions waiting on the directory`),
      );
      return;
    }
    lookupsWaiting++;
    leaveQueued.delete(buildingId);
    inOrder(buildingId, async () => {
      // A socket gone while this call waited its turn needs no answer: the directory is not asked.
      const granted = socket.connected && (await lookupSlot());
      if (!granted || !socket.connected) {
        if (granted) releaseLookupSlot();
        lookupsWaiting--;
        logger.debug({ accountId: identity.accountId, buildingId }, 'subscription dropped: the socket left before its turn');
        return;
      }
      const decision = await decideSubscription(directory, identity, buildingId).finally(() => {
        releaseLookupSlot();
        lookupsWaiting--;
      });
      if (!socket.connected) return;
      if (!decision.subscribed) {
        // A refusal leaves the socket outside the room, even one it joined earlier: the building may have
        // changed tenant since, and the ack must not say "not subscribed" while readings still arrive.
        await socket.leave(buildingRoom(buildingId));
        refuse(ack, buildingId, decision.reason, decision.detail);
        return;
      }
      await socket.join(buildingRoom(buildingId));
      answer(ack, { subscribed: true, buildingId });
    });
  });

  socket.on('unsubscribe_building', (...args: unknown[]) => {
    const { value } = argumentsOf(args);
    if (!isValidBuildingId(value)) return;
    // A leave already last in the building's queue makes this one redundant: unsubscribes queue at
    // most one per subscribe call waiting, so they are bounded by the cap too.
    if (leaveQueued.has(value)) return;
    leaveQueued.add(value);
    inOrder(value, () => {
      leaveQueued.delete(value);
      return socket.leave(buildingRoom(value));
    });
  });
}
