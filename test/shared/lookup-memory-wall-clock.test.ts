/**
 * A host whose lookup did not answer within its wait is refused for `rememberMs`, measured on the
 * monotonic clock. It was measured on the wall clock: a gateway that booted with its RTC decades ahead
 * (2106) and was then set back by NTP refused such a host until the wall clock caught up again, decades
 * instead of 30 s. The wall clock is stepped in-process (Date.now); the resolver is injected.
 */
import type { LookupAddress } from 'node:dns';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { limitLookups, type Resolver } from '../../shared/lookup.js';
import { steppableWallClock } from '../support/wall-clock.js';

const WAIT_MS = 20;
// Long beside the wait, so a loaded machine's late timers still find the host remembered.
const REMEMBER_MS = 1000;
const YEAR_MS = 365 * 24 * 3_600_000;
const LATE_HOST = 'late.test';
const ADDRESS = '192.0.2.10';

/**
 * A resolver (the outside DNS service) whose lookups of {@link LATE_HOST} are held unanswered until
 * `answer()`, and answered at once after it. Any other name is refused and recorded in `unexpected`.
 */
function lateResolver(): { resolve: Resolver; asked: string[]; unexpected: string[]; answer(): void } {
  const asked: string[] = [];
  const unexpected: string[] = [];
  const held: Array<() => void> = [];
  let answering = false;
  const addresses: LookupAddress[] = [{ address: ADDRESS, family: 4 }];
  return {
    resolve: (hostname, _options, callback) => {
      if (hostname !== LATE_HOST) {
        unexpected.push(hostname);
        callback(Object.assign(new Error(`unexpected lookup of ${hostname}`), { code: 'ENOTFOUND' }), []);
        return;
      }
      asked.push(hostname);
      const reply = () => callback(null, addresses);
      if (answering) process.nextTick(reply);
      else held.push(reply);
    },
    asked,
    unexpected,
    answer: () => {
      answering = true;
      for (const reply of held.splice(0)) reply();
    },
  };
}

/** What `resolve` answered for `hostname`: its error, or its addresses. */
function lookupOf(resolve: Resolver, hostname: string): Promise<{ err: NodeJS.ErrnoException | null; addresses: LookupAddress[] }> {
  return new Promise((done) => resolve(hostname, { all: true }, (err, addresses) => done({ err, addresses })));
}

t.test('a host remembered while the wall clock ran decades ahead is looked up again once its memory has passed after NTP sets the clock back', async (t) => {
  const wallClock = steppableWallClock(t);
  const dns = lateResolver();
  const resolve = limitLookups(dns.resolve, { maxInFlight: 1, waitMs: WAIT_MS, rememberMs: REMEMBER_MS });

  wallClock.step(80 * YEAR_MS);
  const unanswered = await lookupOf(resolve, LATE_HOST);
  t.match(unanswered.err, { code: 'ERR_LOOKUP_UNANSWERED', remembered: false }, 'its lookup did not answer within its wait');
  // Past the lookup's own wait: it is overdue, and its host remembered.
  await sleep(WAIT_MS);
  const refused = await lookupOf(resolve, LATE_HOST);
  t.match(refused.err, { code: 'ERR_LOOKUP_UNANSWERED', remembered: true }, 'refused at once while it is remembered');
  t.equal(dns.asked.length, 1, 'with no second lookup');

  // The late answer comes; then NTP sets the clock back 80 years.
  dns.answer();
  wallClock.reset();
  // Timers run on the monotonic clock: past this, the memory has passed.
  await sleep(2 * REMEMBER_MS);
  const again = await lookupOf(resolve, LATE_HOST);
  t.equal(again.err, null, `looked up again ${REMEMBER_MS} ms after it was remembered, not 80 years`);
  t.same(again.addresses, [{ address: ADDRESS, family: 4 }]);
  t.equal(dns.asked.length, 2, 'by a new lookup');
  t.same(dns.unexpected, [], 'no other name was looked up');
});
