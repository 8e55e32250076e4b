/**
 * A writer queued behind other writers of its own process waits for the conversation's lock no longer
 * than `waitMs` from its call, as one that found it free does: not `waitMs` after the writers ahead of
 * it are through (the k-th would answer after k waits, and none behind a holder that never ends). The
 * writers that gave up must not let a later one run before the holder is done. On a real FerretDB.
 */
import t from 'tap';
import { ConversationLock, LEASE_COLLECTION, LockTimeoutError, type LeaseDocument } from '../../../cloud/chat/conversation-lock.js';
import { freshChatDatabase } from './support/mongo.js';

const WAIT_MS = 1_500;

/**
 * What `promise` came to, or 'still waiting' once `guardMs` passed. Only a guard, far beyond the wait
 * limit, so that a writer waiting without limit fails the test instead of hanging it.
 */
async function outcomeOf(promise: Promise<unknown>, guardMs: number): Promise<{ rejected: unknown } | 'resolved' | 'still waiting'> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const guard = new Promise<'still waiting'>((resolve) => (timer = setTimeout(() => resolve('still waiting'), guardMs)));
  try {
    return await Promise.race([promise.then(() => 'resolved' as const, (err: unknown) => ({ rejected: err })), guard]);
  } finally {
    clearTimeout(timer);
  }
}

t.test('two writers queued behind a holder that keeps the lock both give up with LockTimeoutError while it still holds', async (t) => {
  const { db } = await freshChatDatabase(t);
  const leases = db.collection<LeaseDocument>(LEASE_COLLECTION);
  const lock = new ConversationLock(leases, { leaseMs: 10_000, waitMs: WAIT_MS, pollMs: 5 });
  const order: string[] = [];
  let finishHolder!: () => void;
  const holderMayFinish = new Promise<void>((resolve) => (finishHolder = resolve));
  let entered!: () => void;
  const holderEntered = new Promise<void>((resolve) => (entered = resolve));
  const holder = lock.withLock('c1', async () => {
    order.push('holder in');
    entered();
    await holderMayFinish;
    order.push('holder out');
  });
  t.teardown(async () => {
    finishHolder();
    await holder;
    await lock.settled();
  });
  await holderEntered;

  const first = lock.withLock('c1', async () => order.push('first in'));
  const second = lock.withLock('c1', async () => order.push('second in'));
  const firstOutcome = await outcomeOf(first, 10 * WAIT_MS);
  t.ok(firstOutcome !== 'still waiting' && firstOutcome !== 'resolved' && firstOutcome.rejected instanceof LockTimeoutError, 'the first writer in the queue gives up', {
    found: firstOutcome,
  });
  const secondOutcome = await outcomeOf(second, 10 * WAIT_MS);
  t.ok(secondOutcome !== 'still waiting' && secondOutcome !== 'resolved' && secondOutcome.rejected instanceof LockTimeoutError, 'the second one too, within its own limit', {
    found: secondOutcome,
  });
  t.same(order, ['holder in'], 'the holder still holds the lock, and no writer behind it ran');
  t.equal(await leases.countDocuments({ conversation: 'c1' }), 1, 'its lease is still taken');

  // Queued behind the two that gave up: it must still wait for the holder, not run beside it.
  const third = lock.withLock('c1', async () => order.push('third in'));
  finishHolder();
  await holder;
  await third;
  t.same(order, ['holder in', 'holder out', 'third in'], 'a later writer ran only once the holder was done');
  await lock.settled();
  t.equal(await leases.countDocuments({}), 0, 'every lease was released');
});
