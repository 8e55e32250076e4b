/** JSON parsing shared by the JSON parsers, with an error that never echoes the output back. */
import { ParseError } from './types.js';

export function parseJsonOutput(output: string, what: string): unknown {
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
