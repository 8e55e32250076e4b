/**
 * An SNMP AP, like an SSH one, may list at most MAX_STATIONS_PER_AP stations, and so may each AP behind a
 * controller: the SNMP path returned every decoded row, and an agent listing tens of thousands of
 * made-up stations filled the zone tracker's heap. Against the real snmpd, with generated tables.
 */
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadDialects } from '../../../edge/src/poll/dialects.js';
import { MAX_STATIONS_PER_AP } from '../../../edge/src/poll/limits.js';
import { createPoller } from '../../../edge/src/poll/poller.js';
import type { AccessPoint } from '../../../edge/src/poll/types.js';
import { startSnmpd } from '../../support/peers/snmpd.js';
import { startControllers, wlcAccessPoint, wlcRecording } from './support/wlc-recording.js';

const dialects = loadDialects();
const TIMEOUT_MS = 60_000;

/** An Aruba controller's station table (the signal column the dialect walks without apZones), `rows` stations. */
function arubaRecording(rows: number): string {
  const lines = Array.from({ length: rows }, (_, i) => `.1.3.6.1.4.1.14823.2.2.1.5.2.2.1.1.14.2.0.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}.1 = INTEGER: 30`);
  return `${lines.join('\n')}\n`;
}

const aruba = (name: string, port: number): AccessPoint => ({
  name,
  zone: 'lobby',
  dialect: 'aruba-aos',
  target: { transport: 'snmp', host: '127.0.0.1', port, version: '2c', community: 'lintel-ro' },
});

t.test(`an SNMP AP listing ${MAX_STATIONS_PER_AP} stations reads; one listing more fails with bad_output`, async (t) => {
  const dir = t.testdir({});
  writeFileSync(join(dir, 'at-cap.snmpwalk'), arubaRecording(MAX_STATIONS_PER_AP));
  writeFileSync(join(dir, 'over-cap.snmpwalk'), arubaRecording(MAX_STATIONS_PER_AP + 1));
  const [atCap, overCap] = await Promise.all(
    ['at-cap', 'over-cap'].map((name) => startSnmpd({ community: 'lintel-ro', recordings: [join(dir, `${name}.snmpwalk`)] })),
  );
  t.teardown(() => Promise.all([atCap!.stop(), overCap!.stop()]));

  const poller = createPoller({ dialects });
  t.teardown(() => poller.close());
  const [read, refused] = await poller.pollAll([aruba('at-cap', atCap!.port), aruba('over-cap', overCap!.port)], TIMEOUT_MS);
  t.match(read, { ap: 'at-cap', ok: true, stations: { length: MAX_STATIONS_PER_AP } });
  t.same(refused, {
    ap: 'over-cap',
    zone: 'lobby',
    ok: false,
    reason: 'bad_output',
    error: `more than ${MAX_STATIONS_PER_AP} stations listed (${MAX_STATIONS_PER_AP + 1}); no AP carries that many`,
    durationMs: refused?.durationMs,
  });
});

t.test('behind a controller, an AP listing more stations than the cap fails the controller with bad_output', async (t) => {
  const dir = t.testdir({});
  writeFileSync(join(dir, 'wlc-over-cap.snmpwalk'), wlcRecording(MAX_STATIONS_PER_AP + 1));
  writeFileSync(join(dir, 'wlc-small.snmpwalk'), wlcRecording(10));
  const [overCap, small] = await startControllers(join(dir, 'wlc-over-cap.snmpwalk'), join(dir, 'wlc-small.snmpwalk'));
  t.teardown(() => Promise.all([overCap.stop(), small.stop()]));

  const poller = createPoller({ dialects });
  t.teardown(() => poller.close());
  const results = await poller.pollAll([wlcAccessPoint('over-cap', overCap.port), wlcAccessPoint('small', small.port)], TIMEOUT_MS);
  t.same(
    results.map((r) => (r.ok ? { zone: r.zone, stations: r.stations.length } : { zone: r.zone, reason: r.reason, error: r.error })),
    [
      {
        zone: 'over-cap',
        reason: 'bad_output',
        error: `more than ${MAX_STATIONS_PER_AP} stations listed for one AP behind the controller (${MAX_STATIONS_PER_AP + 1}); no AP carries that many`,
      },
      { zone: 'small', stations: 10 },
    ],
    'the AP behind it fails, without its MAC or name; the other controller reads',
  );
});
