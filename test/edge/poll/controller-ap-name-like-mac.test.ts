/**
 * A controller that names its APs by text (cisco-wlc: bsnAPName) matches apZones keys as written, even a
 * name that looks like a MAC, against the real snmpd. The keys used to be normalised as MACs whatever the
 * dialect, so an AP named `001a.2b3c.4d5e` (Cisco's spelling of its MAC, a common default) was keyed
 * `00:1a:2b:3c:4d:5e`, matched no row, and stayed ap_down forever.
 */
import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadDialects } from '../../../edge/src/poll/dialects.js';
import { createPoller } from '../../../edge/src/poll/poller.js';
import { recording, startSnmpd } from '../../support/peers/snmpd.js';
import { edgeRecording } from '../support/recordings.js';

const NAME = '001a.2b3c.4d5e';

t.test('cisco-wlc: an AP named like a MAC gets its stations and its status', async (t) => {
  const dir = t.testdir({});
  // the recorded controller, with AP-Lobby-1 renamed in its station table and its AP table
  const files = [recording('cisco-wlc.snmpwalk'), edgeRecording('cisco-wlc-aps.snmpwalk')].map((source, i) => {
    const file = join(dir, `controller-${i}.snmpwalk`);
    writeFileSync(file, readFileSync(source, 'utf8').replaceAll('"AP-Lobby-1"', `"${NAME}"`));
    return file;
  });
  const snmpd = await startSnmpd({ community: 'lintel-ro', recordings: files });
  t.teardown(() => snmpd.stop());
  const poller = createPoller({ dialects: loadDialects() });
  t.teardown(() => poller.close());
  const results = await poller.pollAll(
    [
      {
        name: 'wlc-1',
        zone: 'unused',
        dialect: 'cisco-wlc',
        target: { transport: 'snmp', host: snmpd.host, port: snmpd.port, version: '2c', community: 'lintel-ro' },
        apZones: { [NAME]: 'lobby', 'AP-Cafe-1': 'cafe' },
      },
    ],
    3000,
  );
  t.same(
    results.map((r) => (r.ok ? { ap: r.ap, zone: r.zone, stations: r.stations.length } : { ap: r.ap, zone: r.zone, reason: r.reason, error: r.error })),
    [
      { ap: NAME, zone: 'lobby', stations: 1 },
      { ap: 'AP-Cafe-1', zone: 'cafe', stations: 3 },
    ],
  );
  t.same(results[0]?.ok && results[0].stations, [{ mac: 'f0:18:98:a1:b2:01', rssiDbm: -48 }]);
});
