/**
 * A generated Cisco WLC recording for snmpd: a station table of `rows` rows (the three columns the
 * cisco-wlc dialect walks), every station heard by AP-Lobby-1, and that AP joined.
 */
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
