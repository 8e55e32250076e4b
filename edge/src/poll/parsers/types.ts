/**
 * What a generic parser turns an AP's command output into: stations with the signal in the dialect's raw
 * unit (converted to dBm by the caller), and how many entries could not be read.
 */

export interface RawStation {
  /** Normalised `aa:bb:cc:dd:ee:ff`. */
  mac: string;
  /**
   * As the AP reported it, in the dialect's unit; NaN when the AP listed the station without a numeric
   * signal (no field, null, a string): the station is associated all the same, so it is still returned.
   */
  signal: number;
}

export interface ParsedStations {
  stations: RawStation[];
  /** Entries that named a station but had no usable MAC. */
  skipped: number;
}

/** The output is not what the parser reads: wrong dialect, truncated output, an error page. */
export class ParseError extends Error {
  readonly code = 'bad_output';
  constructor(message: string) {
    super(message);
    this.name = 'ParseError';
  }
}

export type StationParser = (output: string) => ParsedStations;
