/**
 * An agent answering a GETBULK in the middle of a station table with genErr makes net-snmp fail the walk
 * with `GeneralError: <the OID asked for>`, whose index is a station's MAC in decimal octets. The decimal
 * MAC pattern, matched leftmost along the OID, fell out of step with the index and let its last octets
 * into the failure reason, which reaches the log (`<mac>.14823.<mac>.<mac>.18.52.86`). SECURITY.md: no MAC
 * in a log line on the gateway. An OID is blanked whole, by the poller's scrub and the daemon's redaction.
 */
import t from 'tap';
import { loadDialects } from '../../../edge/src/poll/dialects.js';
import { scrubMacs, scrubMacsShort } from '../../../edge/src/poll/mac.js';
import { createPoller } from '../../../edge/src/poll/poller.js';
import { redactIdentifiers } from '../../../edge/src/report/identifiers.js';
import { oidIds, startFakeSnmpAgent } from './support/fake-snmp-agent.js';

const dialects = loadDialects();
/** The station 04:d3:b0:12:34:56 and its AP 00:3a:9a:11:22:01, as an SNMP index spells them. */
const STATION = '4.211.176.18.52.86';
const AP = '0.58.154.17.34.1';

/** The OID of each station table's signal cell for STATION, by the shipped dialect: what a walk asks for next. */
function signalOids(): Array<[string, string]> {
  const oids: Array<[string, string]> = [];
  for (const name of ['aruba-aos', 'ruckus-zd', 'mikrotik', 'cisco-wlc']) {
    const dialect = dialects.get(name);
    if (dialect?.transport !== 'snmp') throw new Error(`${name}: not an SNMP dialect`);
    for (const table of dialect.tables) {
      const index = table.index.map((part, i) => (part.kind === 'int' ? '1' : i === 0 ? STATION : AP)).join('.');
      oids.push([`${name} ${table.name}`, `${table.oid}.${table.signal.column}.${index}`]);
    }
  }
  return oids;
}

t.test('an OID holding a station MAC is blanked whole: no octet of the MAC is left', async (t) => {
  const oids = signalOids();
  t.equal(oids.length, 5, 'aruba-aos, ruckus-zd, two mikrotik tables, cisco-wlc');
  for (const [table, oid] of oids) {
    const error = `GeneralError: ${oid}`;
    t.equal(scrubMacs(error), 'GeneralError: <oid>', `${table}: the poller's scrub`);
    t.equal(scrubMacsShort(error, 300), 'GeneralError: <oid>', `${table}: the poller's scrub of a failure reason`);
    t.equal(redactIdentifiers(error), 'GeneralError: [oid]', `${table}: the daemon's redaction`);
    t.notMatch(scrubMacs(`index .${oid.slice(oid.indexOf(STATION))} gone`), /\d/, `${table}: the index alone`);
  }
  t.equal(scrubMacs(`row ${STATION}`), 'row <mac>', 'the six octets alone are a MAC');
  t.equal(scrubMacs('polled 10.20.0.11 in 2.5 s (v1.2.3)'), 'polled 10.20.0.11 in 2.5 s (v1.2.3)', 'an address and a version are not OIDs');
});

t.test('a genErr in the middle of a walk fails the AP with an error that holds no octet of the MAC', async (t) => {
  const arubaSignal = oidIds('1.3.6.1.4.1.14823.2.2.1.5.2.2.1.1.14');
  const station = oidIds(STATION);
  // the first datagram: one station; the request for the rest of the table: genErr
  const agent = await startFakeSnmpAgent(t, {
    community: 'lintel-ro',
    answer: (_request, nth) => (nth === 1 ? { varbinds: [{ oid: [...arubaSignal, ...station], value: 41 }] } : nth === 2 ? { errorStatus: 5 } : undefined),
  });
  const poller = createPoller({ dialects });
  t.teardown(() => poller.close());
  const [result] = await poller.pollAll(
    [{ name: 'lobby-1', zone: 'lobby', dialect: 'aruba-aos', target: { transport: 'snmp', host: '127.0.0.1', port: agent.port, version: '2c', community: 'lintel-ro' } }],
    5000,
  );
  t.equal(agent.requests.length, 2, 'the walk asked on from the station');
  t.same(agent.requests[1]?.oid, [...arubaSignal, ...station], 'from the OID that holds its MAC');
  t.match(result, { ok: false, reason: 'error', error: 'RequestFailedError: GeneralError: <oid>' });
  const error = result && !result.ok ? result.error : '';
  t.notMatch(redactIdentifiers(error), /\d/, 'nor a number of any kind once the daemon redacts it for the log');
});
