/**
 * UniFi `mca-dump`: one JSON document; stations are under `vap_table[].sta_table[]`, each with `mac` and
 * `signal` in dBm (`rssi` there is an SNR and is ignored). A station without a numeric `signal` is
 * returned with a NaN signal, not skipped.
 */
import { normalizeMac } from '../mac.js';
import { isRecord, parseJsonOutput, signalOf } from './json.js';
import { ParseError, type ParsedStations, type RawStation } from './types.js';

/**
 * @example
 * parseMcaDump('{"vap_table":[{"name":"ath0","sta_table":[{"mac":"04:d3:b0:12:34:56","signal":-52}]}]}');
 * // { stations: [{ mac: '04:d3:b0:12:34:56', signal: -52 }], skipped: 0 }
 */
export function parseMcaDump(output: string): ParsedStations {
  const json = parseJsonOutput(output, 'mca-dump');
  if (!isRecord(json) || !Array.isArray(json.vap_table)) {
    throw new ParseError('mca-dump: expected an object with a "vap_table" array');
  }
  const stations: RawStation[] = [];
  let skipped = 0;
  for (const vap of json.vap_table) {
    if (!isRecord(vap)) continue;
    if (vap.sta_table === undefined) continue;
    if (!Array.isArray(vap.sta_table)) throw new ParseError('mca-dump: vap_table[].sta_table is not an array');
    for (const sta of vap.sta_table) {
      const mac = isRecord(sta) && typeof sta.mac === 'string' ? normalizeMac(sta.mac) : undefined;
      if (mac === undefined) skipped++;
      else stations.push({ mac, signal: signalOf(isRecord(sta) ? sta.signal : undefined) });
    }
  }
  return { stations, skipped };
}
