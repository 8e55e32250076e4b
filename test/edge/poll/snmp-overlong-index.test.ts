/**
 * An agent may answer OIDs of any length, and net-snmp takes them: one answering a walk with OIDs of
 * tens of thousands of sub-ids, each held until the poll is decoded while the value budget counted it as
 * one value, filled the collector's heap in a few hundred datagrams. A row index longer than any table's
 * fails the walk at the first such OID: that AP fails with bad_output, the other APs are polled.
 */
import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BUILTIN_DIALECT_DIR, loadDialects, parseDialect } from '../../../edge/src/poll/dialects.js';
import { MAX_SNMP_INDEX_IDS } from '../../../edge/src/poll/limits.js';
import { createPoller } from '../../../edge/src/poll/poller.js';
import type { AccessPoint, SnmpTarget } from '../../../edge/src/poll/types.js';
import { recording, startSnmpd } from '../../support/peers/snmpd.js';
import { oidIds, startFakeSnmpAgent } from './support/fake-snmp-agent.js';

const dialects = loadDialects();
const TIMEOUT_MS = 5000;
const ARUBA_SIGNAL_COLUMN = '1.3.6.1.4.1.14823.2.2.1.5.2.2.1.1.14';
const TOO_LONG = `the agent answered an OID whose row index has more than ${MAX_SNMP_INDEX_IDS} sub-ids; no table read here has one that long`;

const v2c = (port: number): SnmpTarget => ({ transport: 'snmp', host: '127.0.0.1', port, version: '2c', community: 'lintel-ro' });
const aruba = (name: string, port: number): AccessPoint => ({ name, zone: 'lobby', dialect: 'aruba-aos', target: v2c(port) });

t.test('an agent answering OIDs of 20,000 sub-ids fails its AP with bad_output at the first one; the other AP is polled', async (t) => {
  const column = oidIds(ARUBA_SIGNAL_COLUMN);
  const longIndex = new Array<number>(20_000).fill(1);
  // two rows a datagram (some 40 KB), in increasing order, for ten requests: what a walk that goes on gets
  const agent = await startFakeSnmpAgent(t, {
    community: 'lintel-ro',
    answer: (request, nth) =>
      nth > 10
        ? { varbinds: [{ oid: request.oid, value: 'endOfMibView' }] }
        : { varbinds: [2 * nth - 1, 2 * nth].map((row) => ({ oid: [...column, ...longIndex, row], value: 40 })) },
  });
  const snmpd = await startSnmpd({ community: 'lintel-ro', recordings: [recording('mikrotik.snmpwalk')] });
  t.teardown(() => snmpd.stop());

  const poller = createPoller({ dialects });
  t.teardown(() => poller.close());
  const [hostile, other] = await poller.pollAll(
    [aruba('hostile', agent.port), { name: 'hall', zone: 'hall', dialect: 'mikrotik', target: v2c(snmpd.port) }],
    TIMEOUT_MS,
  );
  t.same(hostile, { ap: 'hostile', zone: 'lobby', ok: false, reason: 'bad_output', error: TOO_LONG, durationMs: hostile?.durationMs });
  t.equal(agent.requests.length, 1, 'the walk asked for nothing after the first answer');
  t.match(other, { ap: 'hall', ok: true, stations: { length: 3 } }, 'the other AP is polled as usual');
});

t.test(`against snmpd: a row index of ${MAX_SNMP_INDEX_IDS} sub-ids is a row the dialect cannot read; one of ${MAX_SNMP_INDEX_IDS + 1} fails the AP`, async (t) => {
  const dir = t.testdir({});
  // two stations as the recorded controller lists them, and before them one row of an index `ids` long
  const withRowOf = (ids: number) => {
    const file = join(dir, `aruba-index-${ids}.snmpwalk`);
    const rows = [`${new Array<string>(ids).fill('1').join('.')} = INTEGER: 40`, '4.211.176.18.52.86 = INTEGER: 41', '88.206.42.170.0.17 = INTEGER: 27'];
    writeFileSync(file, rows.map((row) => `.${ARUBA_SIGNAL_COLUMN}.${row}\n`).join(''));
    return file;
  };
  const [longest, tooLong] = await Promise.all([
    startSnmpd({ community: 'lintel-ro', recordings: [withRowOf(MAX_SNMP_INDEX_IDS)] }),
    startSnmpd({ community: 'lintel-ro', recordings: [withRowOf(MAX_SNMP_INDEX_IDS + 1)] }),
  ]);
  t.teardown(() => Promise.all([longest.stop(), tooLong.stop()]));

  const poller = createPoller({ dialects });
  t.teardown(() => poller.close());
  const [read, refused] = await poller.pollAll([aruba('longest', longest.port), aruba('too-long', tooLong.port)], TIMEOUT_MS);
  t.match(read, { ap: 'longest', ok: true, stations: { length: 2 } }, 'the other rows are read');
  t.match(refused, { ap: 'too-long', ok: false, reason: 'bad_output', error: TOO_LONG });
});

t.test('a dialect whose table index is longer than a walk accepts is refused at load', async (t) => {
  const file = JSON.parse(readFileSync(join(BUILTIN_DIALECT_DIR, 'aruba-aos.json'), 'utf8')) as { tables: Array<{ index: unknown[] }> };
  file.tables[0]!.index = [...file.tables[0]!.index, ...['a', 'b', 'c', 'd', 'e'].map((name) => ({ name, kind: 'mac' }))];
  t.same(parseDialect(file, 'aruba-aos.json'), {
    ok: false,
    errors: [`aruba-aos.json: tables[0].index: 36 sub-ids, more than the ${MAX_SNMP_INDEX_IDS} a walk accepts (a MAC is 6, an int 1)`],
  });
});
