import t from 'tap';
import { readFileSync } from 'node:fs';
import { macFromOctets, normalizeMac, scrubMacs } from '../../../edge/src/poll/mac.js';
import { ParseError, parseIwStationDump, parseMcaDump, parseUbusClients } from '../../../edge/src/poll/parsers/index.js';
import { toDbm } from '../../../edge/src/poll/signal.js';
import { recording } from '../../support/peers/snmpd.js';

const read = (name: string) => readFileSync(recording(name), 'utf8');

t.test('iw station dump (recorded): instant signal, or signal avg when the driver gives no instant one', async (t) => {
  t.same(parseIwStationDump(read('openwrt-iw-phy0-ap0.txt')), {
    stations: [
      { mac: '04:d3:b0:12:34:56', signal: -52 },
      { mac: '7c:2e:bd:9a:01:fe', signal: -67 },
      { mac: '2a:11:6f:c0:de:01', signal: -81 },
    ],
    skipped: 0,
  });
  t.same(parseIwStationDump(read('openwrt-iw-phy1-ap0.txt')).stations.length, 2);
  t.same(parseIwStationDump(''), { stations: [], skipped: 0 }, 'an AP with nobody on it');
  t.same(parseIwStationDump('Station 04:d3:b0:12:34:56 (on wlan0)\n\tinactive time:\t10 ms\n'), {
    stations: [{ mac: '04:d3:b0:12:34:56', signal: Number.NaN }],
    skipped: 0,
  });
});

t.test('iw station dump: a block without a signal line is a station of unknown signal, not a bad row', async (t) => {
  const mixed = [
    'Station 02:00:00:00:00:01 (on wlan0)',
    '\tinactive time:\t10 ms',
    '\tsignal:  \t-52 [-54, -56] dBm',
    'Station 02:00:00:00:00:02 (on wlan0)',
    '\tinactive time:\t40 ms',
    '\ttx bitrate:\t6.0 MBit/s',
    'Station not-a-mac (on wlan0)',
    '\tsignal:  \t-60 dBm',
    '',
  ].join('\n');
  t.same(parseIwStationDump(mixed), {
    stations: [
      { mac: '02:00:00:00:00:01', signal: -52 },
      { mac: '02:00:00:00:00:02', signal: Number.NaN },
    ],
    skipped: 1,
  }, 'only the block whose MAC cannot be read is skipped');
});

t.test('iw station dump: output that is not a station dump is an error', async (t) => {
  t.throws(() => parseIwStationDump('command failed: No such device (-19)\n'), ParseError);
  t.throws(() => parseIwStationDump('<html>login</html>'), { message: /expected a "Station <mac> \(on <if>\)" line first/ });
});

t.test('ubus get_clients (recorded): every client, MACs normalised', async (t) => {
  t.same(parseUbusClients(read('openwrt-ubus.json')), {
    stations: [
      { mac: 'd8:3a:dd:01:02:03', signal: -48 },
      { mac: 'f2:6e:0b:aa:bb:cc', signal: -73 },
      { mac: 'b4:e6:2d:77:88:99', signal: -85 },
    ],
    skipped: 0,
  });
  t.same(
    parseUbusClients(read('openwrt-ubus-no-signal.json')),
    {
      stations: [
        { mac: 'd8:3a:dd:01:02:03', signal: Number.NaN },
        { mac: 'f2:6e:0b:aa:bb:cc', signal: Number.NaN },
      ],
      skipped: 0,
    },
    'old hostapd: no signal field, clients listed all the same',
  );
  t.same(parseUbusClients('{"freq":2437,"clients":{}}'), { stations: [], skipped: 0 });
});

t.test('ubus get_clients: a client without a numeric signal is a station of unknown signal, not a bad row', async (t) => {
  const mixed = JSON.stringify({
    freq: 5180,
    clients: {
      '02:00:00:00:00:01': { assoc: true, signal: -52 },
      '02:00:00:00:00:02': { assoc: true },
      '02:00:00:00:00:03': { assoc: true, signal: null },
      '02:00:00:00:00:04': { assoc: true, signal: 'unknown' },
      'not-a-mac': { assoc: true, signal: -60 },
    },
  });
  t.same(parseUbusClients(mixed), {
    stations: [
      { mac: '02:00:00:00:00:01', signal: -52 },
      { mac: '02:00:00:00:00:02', signal: Number.NaN },
      { mac: '02:00:00:00:00:03', signal: Number.NaN },
      { mac: '02:00:00:00:00:04', signal: Number.NaN },
    ],
    skipped: 1,
  }, 'only the client whose MAC cannot be read is skipped');
});

t.test('ubus get_clients: malformed output is an error that does not echo the output', async (t) => {
  const error = t.throws(() => parseUbusClients('{"clients": {"aa:bb:cc:dd:ee:ff": {"signal": -40}')) as Error;
  t.ok(error instanceof ParseError);
  t.equal(error.message, 'ubus get_clients: output is not JSON (49 bytes)');
  t.throws(() => parseUbusClients('{"freq": 2437}'), { message: /expected an object with a "clients" object/ });
  t.throws(() => parseUbusClients('Command failed: Not found'), ParseError);
});

t.test('mca-dump (recorded): stations of every VAP, signal in dBm', async (t) => {
  const parsed = parseMcaDump(read('unifi-mca-dump.json'));
  t.same(parsed, {
    stations: [
      { mac: 'a0:78:17:5e:11:22', signal: -57 },
      { mac: 'a0:78:17:5e:11:22', signal: -49 },
      { mac: '3c:06:30:ab:cd:ef', signal: -66 },
    ],
    skipped: 0,
  });
  t.throws(() => parseMcaDump('{"hostname":"U6"}'), { message: /"vap_table" array/ });
  t.throws(() => parseMcaDump('{"vap_table":[{"sta_table":{}}]}'), { message: /sta_table is not an array/ });
  t.throws(() => parseMcaDump(''), { message: 'mca-dump: output is not JSON (0 bytes, empty)' });
  t.same(parseMcaDump('{"vap_table":[{"sta_table":[{"mac":"zz","signal":-50},{"mac":"a0:78:17:5e:11:22"}]}]}'), {
    stations: [{ mac: 'a0:78:17:5e:11:22', signal: Number.NaN }],
    skipped: 1,
  });
});

t.test('mca-dump: a station without a numeric signal is a station of unknown signal, not a bad row', async (t) => {
  const mixed = JSON.stringify({
    vap_table: [
      { name: 'ath0', sta_table: [{ mac: '02:00:00:00:00:01', signal: -52 }, { mac: '02:00:00:00:00:02', rssi: 40 }] },
      { name: 'ath1', sta_table: [{ mac: '02:00:00:00:00:03', signal: null }, { signal: -60 }, 'not a station'] },
    ],
  });
  t.same(parseMcaDump(mixed), {
    stations: [
      { mac: '02:00:00:00:00:01', signal: -52 },
      { mac: '02:00:00:00:00:02', signal: Number.NaN },
      { mac: '02:00:00:00:00:03', signal: Number.NaN },
    ],
    skipped: 2,
  }, 'only the entries without a readable MAC are skipped');
});

t.test('MACs become lowercase colon form, from any spelling or octets', async (t) => {
  for (const spelling of ['A0:78:17:5E:11:22', 'a0-78-17-5e-11-22', 'a078.175e.1122', 'A078175E1122']) {
    t.equal(normalizeMac(spelling), 'a0:78:17:5e:11:22', spelling);
  }
  t.equal(normalizeMac(Buffer.from([0xa0, 0x78, 0x17, 0x5e, 0x11, 0x22])), 'a0:78:17:5e:11:22');
  t.equal(normalizeMac([160, 120, 23, 94, 17, 34]), 'a0:78:17:5e:11:22');
  for (const bad of ['a0:78:17:5e:11', 'not a mac', 'a0:78:17:5e:11:2g', '']) t.equal(normalizeMac(bad), undefined, bad);
  t.equal(normalizeMac([1, 2, 3, 4, 5, 256]), undefined);
  for (const bad of [-1, 1.5, Number.NaN]) t.equal(normalizeMac([1, 2, 3, 4, 5, bad]), undefined, `octet ${bad}`);
  // an OID index: the MAC starts after the table's own sub-identifiers
  t.equal(macFromOctets([1, 3, 0, 15, 16, 255, 9, 240], 2), '00:0f:10:ff:09:f0');
  t.equal(macFromOctets([1, 3, 0, 15, 16, 255, 9], 2), undefined, 'too short after the offset');
  t.equal(scrubMacs('station A0:78:17:5E:11:22 and a078.175e.1122 left'), 'station <mac> and <mac> left');
});

t.test('signal units become dBm; impossible readings are dropped', async (t) => {
  t.equal(toDbm(-52, { unit: 'dBm' }), -52);
  t.equal(toDbm(41, { unit: 'SNR', noiseFloorDbm: -95 }), -54);
  t.equal(toDbm(0, { unit: 'SNR', noiseFloorDbm: -95 }), undefined, 'SNR 0 is "unknown"');
  t.equal(toDbm(0, { unit: 'dBm' }), undefined, '0 dBm is a filler value, not a signal');
  t.equal(toDbm(-200, { unit: 'dBm' }), undefined);
  t.equal(toDbm(Number.NaN, { unit: 'dBm' }), undefined);
});
