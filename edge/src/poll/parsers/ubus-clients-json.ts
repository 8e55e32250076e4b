/**
 * `ubus call hostapd.<if> get_clients`: `{"freq": …, "clients": {"<mac>": {"signal": -52, …}, …}}`.
 * A client without a numeric `signal` is returned with a NaN signal, not skipped.
 */
import { normalizeMac } from '../mac.js';
import { isRecord, parseJsonOutput, signalOf } from './json.js';
import { ParseError, type ParsedStations, type RawStation } from './types.js';

/**
 * @example
 * parseUbusClients('{"freq":5180,"clients":{"04:d3:b0:12:34:56":{"assoc":true,"signal":-52}}}');
 * // { stations: [{ mac: '04:d3:b0:12:34:56', signal: -52 }], skipped: 0 }
 */
export function parseUbusClients(output: string): ParsedStations {
  const json = parseJsonOutput(output, 'ubus get_clients');
  if (!isRecord(json) || !isRecord(json.clients)) {
    throw new ParseError('ubus get_clients: expected an object with a "clients" object');
  }
  const stations: RawStation[] = [];
  let skipped = 0;
  for (const [key, client] of Object.entries(json.clients)) {
    const mac = normalizeMac(key);
    // hostapd builds without signal reporting list a client with no "signal": still associated
    if (mac === undefined) skipped++;
    else stations.push({ mac, signal: signalOf(isRecord(client) ? client.signal : undefined) });
  }
  return { stations, skipped };
}
