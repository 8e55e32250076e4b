/**
 * A generated Cisco WLC for snmpd: a station table of `rows` rows (the three columns the cisco-wlc
 * dialect walks), every station heard by AP-Lobby-1, and that AP joined; and the controller as the
 * collector's config names it.
 */
import { startSnmpd, type RunningSnmpd } from '../../../support/peers/snmpd.js';
import type { AccessPoint } from '../../../../edge/src/poll/types.js';

const WLC_ENTRY = '.1.3.6.1.4.1.14179.2.1.11.1';

export function wlcRecording(rows: number): string {
  const lines: string[] = [
    '.1.3.6.1.4.1.14179.2.2.1.1.3.0.58.154.17.34.1 = STRING: "AP-Lobby-1"',
    '.1.3.6.1.4.1.14179.2.2.1.1.6.0.58.154.17.34.1 = INTEGER: 1',
  ];
  for (const [column, value] of [[4, 'STRING: "AP-Lobby-1"'], [5, 'INTEGER: -50'], [25, 'Counter32: 3']] as const) {
    for (let i = 0; i < rows; i++) lines.push(`${WLC_ENTRY}.${column}.2.0.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}.1.0.58.154.17.34.1.1.0 = ${value}`);
  }
  return `${lines.join('\n')}\n`;
}

/** Starts two snmpd, each serving one recording file: two controllers. */
export function startControllers(first: string, second: string): Promise<[RunningSnmpd, RunningSnmpd]> {
  const start = (file: string) => startSnmpd({ community: 'lintel-ro', recordings: [file] });
  return Promise.all([start(first), start(second)]);
}

/** A cisco-wlc controller on loopback whose one AP, AP-Lobby-1, is in the zone `name`. */
export function wlcAccessPoint(name: string, port: number): AccessPoint {
  return {
    name,
    zone: 'unused',
    dialect: 'cisco-wlc',
    target: { transport: 'snmp', host: '127.0.0.1', port, version: '2c', community: 'lintel-ro' },
    apZones: { 'AP-Lobby-1': name },
  };
}
