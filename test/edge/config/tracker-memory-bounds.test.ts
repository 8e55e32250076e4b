/**
 * The tracker remembers at most a day. A transition window of a week keeps every move of the week in
 * memory, walked and rewritten to the zone file every poll; an absentPolls of millions keeps every
 * randomised MAC ever heard. Either grows past the heap and crash-loops the collector, so both are
 * refused at start, saying why. (The sample config's values load: config-file.test.ts.)
 */
import t, { type Test } from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseConfig, shippedDialects, type ConfigResult } from '../../../edge/src/config/index.js';

const dialects = shippedDialects();

const withTracker = (tracker: string, pollIntervalS = 10) => `
buildingId: hq
pollIntervalS: ${pollIntervalS}
requestTimeoutS: 5
zones:
  lobby:
accessPoints:
  - { name: lobby-1, zone: lobby, dialect: aruba-aos, transport: snmp, host: 10.0.0.5, snmp: { version: 2c, communityFile: community } }
tracker: ${tracker}
`;

function parsed(t: Test, text: string): ConfigResult {
  const dir = t.testdir({});
  writeFileSync(join(dir, 'community'), 'public\n', { mode: 0o600 });
  return parseConfig(text, join(dir, 'c.yaml'), { dialects });
}

t.test('a transition window of up to a day loads; a longer one is refused, saying why', async (t) => {
  const day = parsed(t, withTracker('{ transitionWindowS: 86400 }'));
  t.ok(day.ok, day.ok ? 'a day loads' : day.errors.join('\n'));
  if (day.ok) t.equal(day.config.tracker.transitionWindowPolls, 8640);
  for (const windowS of [86400.5, 604800, 1e12]) {
    const result = parsed(t, withTracker(`{ transitionWindowS: ${windowS} }`));
    t.notOk(result.ok, `${windowS} s is refused`);
    if (!result.ok) {
      t.same(result.errors, [
        `tracker.transitionWindowS: expected at most 86400 (one day), got ${windowS}; every move in the window is kept in memory and rewritten to the zone file each poll`,
      ]);
    }
  }
});

t.test('absentPolls up to a day of polls loads; more is refused, saying why', async (t) => {
  const day = parsed(t, withTracker('{ absentPolls: 8640 }'));
  t.ok(day.ok, day.ok ? 'a day of 10 s polls loads' : day.errors.join('\n'));
  if (day.ok) t.equal(day.config.tracker.absentPolls, 8640);
  for (const absentPolls of [8641, 10_000_000]) {
    const result = parsed(t, withTracker(`{ absentPolls: ${absentPolls} }`));
    t.notOk(result.ok, `${absentPolls} polls of 10 s are refused`);
    if (!result.ok) {
      t.same(result.errors, [
        `tracker.absentPolls: expected at most 8640 (one day of polls at pollIntervalS 10), got ${absentPolls}; every device unheard that long is kept in memory, and a randomised MAC is never heard again`,
      ]);
    }
  }
});

t.test('with polls longer than a day, absentPolls may still be 1, the least it can be', async (t) => {
  const one = parsed(t, withTracker('{ absentPolls: 1 }', 100_000));
  t.ok(one.ok, one.ok ? 'loads' : one.errors.join('\n'));
  const two = parsed(t, withTracker('{ absentPolls: 2 }', 100_000));
  t.notOk(two.ok);
  if (!two.ok) t.match(two.errors, [/^tracker\.absentPolls: expected at most 1 \(one day of polls at pollIntervalS 100000\), got 2; /]);
});
