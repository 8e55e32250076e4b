/**
 * An `iw station dump` line an AP pads with spaces fails that AP with bad_output at once. The Station
 * pattern used to backtrack quadratically on `Station a (on ` and a run of spaces with no `)`: a line of a
 * megabyte held the event loop for minutes (tap's timeout fails these tests then), so the poll's deadline
 * could not fire and every other AP timed out. Against the real sshd, the other AP's stations still arrive.
 */
import t from 'tap';
import { MAX_OUTPUT_LINE_CHARS } from '../../../edge/src/poll/limits.js';
import { ParseError, parseIwStationDump } from '../../../edge/src/poll/parsers/index.js';
import { recording } from '../../support/peers/snmpd.js';
import { pollTwoOpenWrtAps } from './support/stderr-aps.js';

/** Just under the 1 MiB an SSH command may print. */
const PADDED_STATION_LINE = `Station a (on ${' '.repeat(1_000_000)}`;

t.test('iw station dump: a megabyte line is refused as bad_output', async (t) => {
  t.throws(() => parseIwStationDump(`${PADDED_STATION_LINE}\n`), {
    constructor: ParseError,
    code: 'bad_output',
    message: `iw station dump: a line longer than ${MAX_OUTPUT_LINE_CHARS} characters (${PADDED_STATION_LINE.length}); iw prints none that long`,
  });
  const afterAStation = `Station 02:00:00:00:00:01 (on wlan0)\n\tsignal:  \t-52 dBm\n\ttx bitrate:\t${'9'.repeat(MAX_OUTPUT_LINE_CHARS)}\n`;
  t.throws(() => parseIwStationDump(afterAStation), { code: 'bad_output' }, 'in a station block too');
});

t.test('iw station dump: a Station line padded within the line bound is read, or refused, as before', async (t) => {
  const pad = ' '.repeat(MAX_OUTPUT_LINE_CHARS - 60);
  t.same(parseIwStationDump(`Station 02:00:00:00:00:01 (on${pad}wlan0)\n\tsignal: -52 dBm\n`), {
    stations: [{ mac: '02:00:00:00:00:01', signal: -52 }],
    skipped: 0,
  });
  t.throws(() => parseIwStationDump(`Station 02:00:00:00:00:01 (on${pad}\n\tsignal: -52 dBm\n`), {
    message: 'iw station dump: expected a "Station <mac> (on <if>)" line first',
  }, 'without its closing parenthesis it is no Station line');
});

t.test('an AP printing a padded Station line fails with bad_output; the other AP is polled as usual', async (t) => {
  const [padded, usual] = await pollTwoOpenWrtAps(t, { wlan0: { stdout: `${PADDED_STATION_LINE}\n` }, wlan1: { stdoutFile: recording('openwrt-iw-phy0-ap0.txt') } }, ['padded', 'usual']);
  t.match(padded, { ap: 'padded', ok: false, reason: 'bad_output', error: /^iw station dump: a line longer than 4096 characters/ });
  t.match(usual, { ap: 'usual', ok: true, stations: [{ mac: '04:d3:b0:12:34:56' }, { mac: '7c:2e:bd:9a:01:fe' }, { mac: '2a:11:6f:c0:de:01' }] });
});
