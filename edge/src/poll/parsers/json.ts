/** JSON parsing shared by the JSON parsers, with an error that never echoes the output back. */
import { MAX_JSON_CONTAINERS } from '../limits.js';
import { ParseError } from './types.js';

/** How many `{` and `[` a text holds (inside strings too: an upper bound on its objects and arrays). */
function containersIn(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x7b || c === 0x5b) count++;
  }
  return count;
}

/**
 * Parses an AP's JSON output. A document of more than {@link MAX_JSON_CONTAINERS} objects and arrays is
 * refused before it is parsed: parsed, its many small objects would cost some twenty times its size in heap.
 */
export function parseJsonOutput(output: string, what: string): unknown {
  const containers = containersIn(output);
  if (containers > MAX_JSON_CONTAINERS) {
    throw new ParseError(`${what}: more than ${MAX_JSON_CONTAINERS} objects and arrays (${containers}); no AP lists that many stations`);
  }
  try {
    return JSON.parse(output);
  } catch {
    const size = Buffer.byteLength(output);
    throw new ParseError(`${what}: output is not JSON (${size} bytes${size === 0 ? ', empty' : ''})`);
  }
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A station's `signal` field as the AP wrote it, or NaN (unknown) when it is missing or not a number. */
export function signalOf(value: unknown): number {
  return typeof value === 'number' ? value : Number.NaN;
}
