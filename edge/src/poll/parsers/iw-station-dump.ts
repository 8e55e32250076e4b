/**
 * `iw dev <if> station dump` (nl80211): one `Station <mac> (on <if>)` line per station, then indented
 * `key:<tab>value` lines. The instant `signal:` is preferred; `signal avg:` when the driver has no instant one;
 * a block with neither is returned with a NaN signal, not skipped.
 */
import { MAX_OUTPUT_LINE_CHARS } from '../limits.js';
import { normalizeMac } from '../mac.js';
import { ParseError, type ParsedStations, type RawStation } from './types.js';

/**
 * No two quantifiers here can match the same characters, so a line that almost matches fails in linear
 * time. `\(on\s+[^)]+\)` could (both match spaces): `Station a (on ` and a megabyte of spaces, no `)`,
 * took minutes on the event loop, and the poll's deadline could not fire.
 */
const STATION = /^Station\s+(\S+)\s+\(on\s[^)]+\)\s*$/;
const SIGNAL = /^\s+signal:\s*(-?\d+)/;
const SIGNAL_AVG = /^\s+signal avg:\s*(-?\d+)/;

/**
 * The lines of a text, one at a time: an output of a megabyte of line breaks split at once would be an
 * array of a million strings, some 10 MB of heap.
 */
function* linesOf(text: string): Generator<string> {
  let start = 0;
  while (start <= text.length) {
    const end = text.indexOf('\n', start);
    if (end === -1) {
      yield text.slice(start);
      return;
    }
    yield text.slice(start, end);
    start = end + 1;
  }
}

/**
 * @example
 * parseIwStationDump('Station 04:d3:b0:12:34:56 (on wlan0)\n\tsignal:  \t-52 [-54, -56] dBm\n');
 * // { stations: [{ mac: '04:d3:b0:12:34:56', signal: -52 }], skipped: 0 }
 */
export function parseIwStationDump(output: string): ParsedStations {
  const stations: RawStation[] = [];
  let skipped = 0;
  let current: { mac: string | undefined; signal?: number; avg?: number } | undefined;
  let sawContent = false;

  const finish = () => {
    if (!current) return;
    if (current.mac === undefined) skipped++;
    // a block without a signal line is a station the driver has no reading for: associated all the same
    else stations.push({ mac: current.mac, signal: current.signal ?? current.avg ?? Number.NaN });
    current = undefined;
  };

  for (const line of linesOf(output)) {
    // iw's longest lines (a bitrate with its MCS details) are some 100 characters
    if (line.length > MAX_OUTPUT_LINE_CHARS) {
      throw new ParseError(`iw station dump: a line longer than ${MAX_OUTPUT_LINE_CHARS} characters (${line.length}); iw prints none that long`);
    }
    if (line.trim() === '') continue;
    sawContent = true;
    const station = STATION.exec(line);
    if (station) {
      finish();
      current = { mac: normalizeMac(station[1] ?? '') };
      continue;
    }
    if (!current) {
      throw new ParseError('iw station dump: expected a "Station <mac> (on <if>)" line first');
    }
    const signal = SIGNAL.exec(line);
    if (signal) {
      current.signal = Number(signal[1]);
      continue;
    }
    const avg = SIGNAL_AVG.exec(line);
    if (avg) current.avg = Number(avg[1]);
  }
  finish();
  if (sawContent && stations.length === 0 && skipped === 0) {
    throw new ParseError('iw station dump: no Station block in the output');
  }
  return { stations, skipped };
}
