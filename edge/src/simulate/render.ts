/**
 * What a simulated AP answers, in each dialect's own format: the inverse of the poller's parsers.
 * SNMP dialects become table rows (index sub-ids plus column values), SSH dialects become the text the
 * AP's command prints.
 */
import type { ApStatusTableSpec, SignalUnit, SnmpTableSpec, SshDialect } from '../poll/dialects.js';
import type { StationSighting } from '../poll/types.js';

/** A station as one simulated AP hears it, with the AP it belongs to. */
export interface HeardStation extends StationSighting {
  apName: string;
  apMac: string;
}

/** An AP joined to a simulated controller, as the controller's AP status table lists it. */
export interface JoinedAp {
  name: string;
  mac: string;
  rebooting: boolean;
}

export type CellValue = number | Buffer;

/** One SNMP row: the index sub-ids after `<entry>.<column>.`, and a value per column number. */
export interface SnmpRow {
  index: string;
  cells: Map<number, CellValue>;
}

const macOctets = (mac: string) => mac.split(':').map((octet) => parseInt(octet, 16));

/** The raw reading in the dialect's unit (SNR dialects report dB above their noise floor). */
export function fromDbm(rssiDbm: number, unit: SignalUnit): number {
  return unit.unit === 'SNR' ? Math.max(1, Math.round(rssiDbm - unit.noiseFloorDbm)) : Math.round(rssiDbm);
}

/**
 * Rows of one dialect table for the stations given: the station MAC where the spec reads it (index or
 * column), other MAC index parts are the AP's MAC, integer parts are radio slot / interface 1. Where the
 * index names the station alone (one row per station, as a ZoneDirector lists the AP it is associated
 * with), the loudest AP holds the row.
 */
export function snmpRows(spec: SnmpTableSpec, unit: SignalUnit, stations: readonly HeardStation[], lastHeardSeconds = 1): SnmpRow[] {
  const rows = new Map<string, SnmpRow>();
  const loudest = new Map<string, number>();
  for (const station of stations) {
    const index = spec.index
      .map((part) => {
        if (part.kind === 'int') return '1';
        const isStation = 'index' in spec.station && spec.station.index === part.name;
        return macOctets(isStation ? station.mac : station.apMac).join('.');
      })
      .join('.');
    if ((loudest.get(index) ?? -Infinity) >= station.rssiDbm) continue;
    loudest.set(index, station.rssiDbm);
    const cells = new Map<number, CellValue>([[spec.signal.column, fromDbm(station.rssiDbm, unit)]]);
    if ('column' in spec.station) cells.set(spec.station.column, Buffer.from(macOctets(station.mac)));
    if (spec.apIdentity && 'column' in spec.apIdentity) {
      cells.set(
        spec.apIdentity.column,
        spec.apIdentity.format === 'mac' ? Buffer.from(macOctets(station.apMac)) : Buffer.from(station.apName),
      );
    }
    if (spec.lastHeard) cells.set(spec.lastHeard.column, lastHeardSeconds);
    rows.set(index, { index, cells });
  }
  return [...rows.values()];
}

/**
 * The status a controller reports for one of its APs while it reboots, by dialect. Each keeps the AP listed
 * with a status that is not up, so the poller reads it as down even when it is the only AP joined:
 * - cisco-wlc: AireOS drops an AP that loses its CAPWAP join from bsnAPTable, but a controller with one
 *   AP would then list none, which reads as "status not served" and the AP as empty. The simulated WLC
 *   lists it as downloading(3), as a real one lists an AP it is pushing an image to before its reboot.
 * - ruckus-zd: a ZoneDirector keeps every approved AP in ruckusZDWLANAPTable and shows one it lost
 *   contact with as disconnected(0).
 */
const REBOOTING_AP_STATUS: Readonly<Record<string, number>> = { 'cisco-wlc': 3, 'ruckus-zd': 0 };

/** The not-up status a rebooting AP gets: the dialect's choice above, else its first named state that is not up. */
export function rebootingApStatus(dialectName: string, spec: ApStatusTableSpec): number {
  const chosen = REBOOTING_AP_STATUS[dialectName];
  if (chosen !== undefined && !spec.status.up.includes(chosen)) return chosen;
  const named = Object.keys(spec.status.states ?? {})
    .map(Number)
    .find((value) => !spec.status.up.includes(value));
  return named ?? Math.max(...spec.status.up) + 1;
}

/**
 * Rows of a controller's AP status table, one per AP joined, indexed by the AP MAC (as bsnAPTable and
 * ruckusZDWLANAPTable are): the AP named as the spec says, with its first `up` value while it runs and
 * `rebootingStatus` while it reboots.
 */
export function apStatusRows(spec: ApStatusTableSpec, aps: readonly JoinedAp[], rebootingStatus: number): SnmpRow[] {
  return aps.map((ap) => ({
    index: macOctets(ap.mac).join('.'),
    cells: new Map<number, CellValue>([
      [spec.apIdentity.column, spec.apIdentity.format === 'mac' ? Buffer.from(macOctets(ap.mac)) : Buffer.from(ap.name)],
      [spec.status.column, ap.rebooting ? rebootingStatus : (spec.status.up[0] as number)],
    ]),
  }));
}

function iwStationDump(stations: readonly StationSighting[], iface: string): string {
  return stations
    .map((s, i) =>
      [
        `Station ${s.mac} (on ${iface})`,
        `\tinactive time:\t${(i * 37) % 900} ms`,
        `\trx bytes:\t${100000 + i * 7919}`,
        `\trx packets:\t${800 + i * 13}`,
        `\ttx bytes:\t${200000 + i * 6151}`,
        `\ttx packets:\t${700 + i * 11}`,
        `\tsignal:  \t${s.rssiDbm} [${s.rssiDbm - 2}, ${s.rssiDbm - 3}] dBm`,
        `\tsignal avg:\t${s.rssiDbm + 1} [${s.rssiDbm - 1}, ${s.rssiDbm - 2}] dBm`,
        '\ttx bitrate:\t433.3 MBit/s VHT-MCS 9 80MHz short GI VHT-NSS 1',
        '\trx bitrate:\t390.0 MBit/s VHT-MCS 8 80MHz short GI VHT-NSS 1',
        '\tauthorized:\tyes',
        '\tauthenticated:\tyes',
        '\tassociated:\tyes',
        '\tWMM/WME:\tyes',
        `\tconnected time:\t${60 + i * 17} seconds`,
        '',
      ].join('\n'),
    )
    .join('');
}

function ubusClients(stations: readonly StationSighting[]): string {
  const clients = Object.fromEntries(
    stations.map((s, i) => [
      s.mac,
      {
        auth: true,
        assoc: true,
        authorized: true,
        preauth: false,
        wds: false,
        wmm: true,
        ht: true,
        vht: true,
        he: false,
        wps: false,
        mfp: false,
        aid: i + 1,
        bytes: { rx: 100000 + i * 7919, tx: 200000 + i * 6151 },
        packets: { rx: 800 + i * 13, tx: 700 + i * 11 },
        rate: { rx: 390000, tx: 433300 },
        signal: s.rssiDbm,
      },
    ]),
  );
  return `${JSON.stringify({ freq: 5180, clients }, null, '\t')}\n`;
}

function mcaDump(stations: readonly StationSighting[], apName: string, apMac: string): string {
  const noise = -95;
  return `${JSON.stringify({
    hostname: apName,
    mac: apMac,
    model: 'UAL6',
    version: '6.5.62.14789',
    uptime: 86400,
    vap_table: [
      {
        name: 'rai0',
        radio: 'na',
        essid: 'lintel',
        bssid: apMac,
        num_sta: stations.length,
        up: true,
        sta_table: stations.map((s, i) => ({
          mac: s.mac,
          authorized: true,
          noise,
          rssi: s.rssiDbm - noise,
          signal: s.rssiDbm,
          idletime: i % 30,
          uptime: 60 + i * 17,
        })),
      },
    ],
  })}\n`;
}

/** What the dialect's command prints on this AP (one interface). */
export function sshOutput(dialect: SshDialect, stations: readonly StationSighting[], ap: { name: string; mac: string; iface: string }): string {
  switch (dialect.parser) {
    case 'iw-station-dump':
      return iwStationDump(stations, ap.iface);
    case 'ubus-clients-json':
      return ubusClients(stations);
    case 'mca-dump-json':
      return mcaDump(stations, ap.name, ap.mac);
  }
}
