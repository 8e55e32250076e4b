/**
 * Ledger pruning when the gateway's wall clock steps. Entries carry wall-clock times; a step forward
 * (a bad RTC, a typo in `date -s`) made every entry look older than the retention, and the next hourly
 * prune emptied the audit trail. The newest retention's worth of entries (one per tick at the poll
 * interval, as many as a right clock keeps) now always stays.
 */
import t, { type Test } from 'tap';
import { join } from 'node:path';
import type { DaemonConfig } from '../../../edge/src/daemon.js';
import type { ApPollResult, Poller } from '../../../edge/src/poll/types.js';
import { auditBody } from '../../../edge/src/report/audit.js';
import { openLedger } from '../../../edge/src/report/ledger.js';
import { DEFAULT_TRACKER_CONFIG } from '../../../edge/src/zones/types.js';
import { setupDaemon } from '../support/daemon.js';

const HOUR = 3_600_000;
const config: DaemonConfig = {
  buildingId: 'hq',
  // One tick an hour with a 4-hour retention: a right clock keeps 5 entries (both ends of the 4 hours).
  pollIntervalMs: HOUR,
  requestTimeoutMs: 1_000,
  zones: [{ id: 'lobby' }],
  tracker: DEFAULT_TRACKER_CONFIG,
  accessPoints: [{ name: 'ap-lobby', zone: 'lobby', dialect: 'aruba-aos', target: { transport: 'snmp', host: '127.0.0.1', port: 161, version: '2c', community: 'x' } }],
  reportNames: { 'ap-lobby': 'ap-lobby' },
};
const RETENTION = 4 * HOUR;

/** Every tick sees one station on the lobby AP (plain data, no network: pruning is under test). */
const poller: Poller = {
  async pollAll(): Promise<ApPollResult[]> {
    return [{ ap: 'ap-lobby', zone: 'lobby', ok: true, durationMs: 1, stations: [{ mac: '3c:22:fb:01:02:03', rssiDbm: -50 }] }];
  },
  async close() {},
};

function daemonAt(t: Test) {
  let now = Date.UTC(2026, 10, 1);
  const setup = setupDaemon(t, config, poller, { clock: () => now, ledgerRetentionMs: RETENTION });
  return { ...setup, setNow: (at: number) => (now = at), now: () => now };
}

t.test('a clock stepping years forward keeps the newest retention’s worth of entries', async (t) => {
  const { daemon, ledger, setNow, now } = daemonAt(t);
  for (let i = 0; i < 6; i++) {
    await daemon.tick();
    setNow(now() + HOUR);
  }
  // Time-based pruning along the way: 6 hourly entries, retention 4 h.
  t.equal(ledger.count(), 5, 'entries older than the retention went while the clock was right');
  const before = [...ledger.entries()].map((e) => e.seq);

  setNow(now() + 5 * 365 * 24 * HOUR);
  await daemon.tick();
  const after = [...ledger.entries()].map((e) => e.seq);
  t.equal(after.length, 5, 'the step forward pruned down to a retention’s worth, not to nothing');
  t.same(after, [...before.slice(1), before.at(-1)! + 1], 'the newest entries, the step’s own included');
  t.ok(ledger.verify().ok, 'the chain still verifies from its checkpoint');
});

t.test('a clock stepped forward, then corrected back, keeps pruning hourly', async (t) => {
  const { daemon, ledger, setNow, now } = daemonAt(t);
  const right = now();
  await daemon.tick();
  setNow(right + 10 * 365 * 24 * HOUR);
  await daemon.tick();
  setNow(right + HOUR);
  for (let i = 0; i < 10; i++) {
    await daemon.tick();
    setNow(now() + HOUR);
  }
  t.equal(ledger.count(), 5, 'back on the right clock, entries older than the retention go again (not only ten years on)');
  t.ok(ledger.verify().ok);
});

t.test('a gateway whose RTC is months behind keeps its first entries after NTP corrects the clock', async (t) => {
  const { daemon, ledger, setNow } = daemonAt(t);
  setNow(Date.UTC(2024, 5, 1));
  await daemon.tick();
  setNow(Date.UTC(2024, 5, 1) + 60_000);
  await daemon.tick();
  setNow(Date.UTC(2026, 10, 1));
  await daemon.tick();
  t.equal(ledger.count(), 3, 'the two early entries stay: fewer than a retention’s worth exist');
  t.ok(ledger.verify().ok);
});

t.test('a gateway that booted at 1970, before NTP: devices are tracked, no batch is recorded or sent until the clock is set', async (t) => {
  const { daemon, ledger, setNow } = daemonAt(t);
  setNow(0);
  const early = await daemon.tick();
  t.match(early.batch, { seq: null, delivery: 'not_recorded', reason: 'the wall clock is not set' });
  t.equal(early.tracked, 1, 'the station is tracked all the same');
  setNow(60_000);
  await daemon.tick();
  t.equal(ledger.count(), 0, 'nothing stamped 1970 in the ledger');
  setNow(Date.UTC(2026, 10, 1));
  const set = await daemon.tick();
  t.match(set.batch, { delivery: 'kept' });
  t.equal(ledger.count(), 1);
  t.same(auditBody([...ledger.entries()][0]!.body), [], 'and what is recorded passes the gateway’s own audit');
});

t.test('a clock read past 2100 (an RTC fallen back to 2106) is not set either: nothing recorded or sent until it is', async (t) => {
  const { daemon, ledger, setNow } = daemonAt(t);
  setNow(Date.UTC(2106, 1, 7));
  const wrong = await daemon.tick();
  t.match(wrong.batch, { seq: null, delivery: 'not_recorded', reason: 'the wall clock is not set' });
  t.equal(wrong.tracked, 1, 'the station is tracked all the same');
  t.equal(ledger.count(), 0, 'nothing stamped 2106 in the ledger');
  setNow(Date.UTC(2026, 10, 1));
  t.match((await daemon.tick()).batch, { delivery: 'kept' });
  t.same([...ledger.entries()].map((e) => auditBody(e.body)), [[]], 'and what is recorded passes the gateway’s own audit');
});

t.test('the ledger keeps the newest entries asked for, whatever their times', async (t) => {
  const path = join(t.testdir({}), 'ledger.sqlite');
  const ledger = openLedger(path);
  t.teardown(() => ledger.close());
  for (let i = 1; i <= 5; i++) ledger.append(JSON.stringify({ i }), i);
  t.equal(ledger.prune(100, 2), 3, 'all five are old; the newest two stay');
  t.same([...ledger.entries()].map((e) => e.seq), [4, 5]);
  t.equal(ledger.prune(100, 2), 0, 'nothing more to take');
  t.equal(ledger.prune(100, 0), 2, 'without a floor, every old entry goes');
  t.same(ledger.start().seq, 5);
});
