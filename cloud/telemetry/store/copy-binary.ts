/**
 * Readings in PostgreSQL's binary COPY format, for `COPY readings (building_id, room_id, metric, ts,
 * value, payload) FROM STDIN (FORMAT binary)`: the rows are written straight into one buffer, and
 * PostgreSQL reads the instant and the value as numbers instead of parsing their text (about a tenth
 * less of its CPU per row than the text format, and no text to build here).
 *
 * Each row: the field count (int16), then per field its length (int32) and bytes: text as UTF-8, the
 * instant as int64 microseconds since 2000-01-01 UTC (to the nearest microsecond, as the text format
 * stored it: {@link postgresMicros}), the value as a float8, the payload as jsonb (version byte 1,
 * then its JSON text). A row read from a canonical body (domain/canonical-batch.ts) has its payload
 * copied from the body's bytes; any other row's payload text is encoded here.
 */
import type { ReadingRow } from '../domain/batch.js';
import { ScannedRow } from '../domain/canonical-batch.js';

/** `PGCOPY\n\377\r\n\0`, no flags, no header extension. */
const HEADER = Buffer.from([0x50, 0x47, 0x43, 0x4f, 0x50, 0x59, 0x0a, 0xff, 0x0d, 0x0a, 0x00, 0, 0, 0, 0, 0, 0, 0, 0]);
/** The field count -1 that ends the data. */
const TRAILER = Buffer.from([0xff, 0xff]);

/** 2000-01-01T00:00:00Z, PostgreSQL's epoch, in Unix milliseconds. */
const POSTGRES_EPOCH_MS = 946_684_800_000;
const TWO_32 = 2 ** 32;
const FIELDS = 6;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
/** Field count, six lengths, the instant, the value and the jsonb version byte. */
const FIXED_BYTES_PER_ROW = 2 + FIELDS * 4 + 8 + 8 + 1;

/**
 * Microseconds since PostgreSQL's epoch: a fraction of a millisecond to the nearest microsecond (half
 * a microsecond up). Every path that stores or looks up a reading's instant takes it from here: the
 * keep-first insert of store/readings.ts gets these integers too, never the milliseconds, since
 * PostgreSQL's `to_timestamp(ms / 1000.0)` divides first and rounds some fractions to the microsecond
 * next to this one (a repeat would then be no conflict, but a second row).
 *
 * @example
 * postgresMicros(946_684_800_001.2346); // 1235
 */
export function postgresMicros(ms: number): number {
  const whole = Math.floor(ms);
  return (whole - POSTGRES_EPOCH_MS) * 1000 + Math.round((ms - whole) * 1000);
}

/**
 * The instant a reading is stored at, in Unix milliseconds ({@link postgresMicros}): a reading a
 * fraction of a microsecond before midnight UTC is stored at midnight, in the next day's partition.
 */
export function storedInstant(ms: number): number {
  return POSTGRES_EPOCH_MS + postgresMicros(ms) / 1000;
}

/**
 * Writes `text` at `at` as UTF-8; answers the byte count. ASCII is written here, four characters a
 * word, the rest by Buffer; with `asciiOnly` (the buffer was sized at one byte a character), a
 * non-ASCII text answers -1.
 */
function writeText(out: Buffer, view: DataView, at: number, text: string, asciiOnly: boolean): number {
  const length = text.length;
  let codes = 0;
  let i = 0;
  for (; i + 4 <= length; i += 4) {
    const a = text.charCodeAt(i);
    const b = text.charCodeAt(i + 1);
    const c = text.charCodeAt(i + 2);
    const d = text.charCodeAt(i + 3);
    codes |= a | b | c | d;
    view.setInt32(at + i, (a << 24) | (b << 16) | (c << 8) | d);
  }
  for (; i < length; i++) {
    const code = text.charCodeAt(i);
    codes |= code;
    out[at + i] = code;
  }
  if (codes < 0x80) return length;
  return asciiOnly ? -1 : out.write(text, at, 'utf8');
}

/** Writes a text field (its length, then its bytes) at `at`; answers where the next field starts, or -1 (see writeText). */
function textField(out: Buffer, view: DataView, at: number, text: string, asciiOnly: boolean): number {
  const length = writeText(out, view, at + 4, text, asciiOnly);
  if (length < 0) return -1;
  view.setInt32(at, length);
  return at + 4 + length;
}

/** Copies `count` bytes from `from` in `source` to `to` in `view`, four a word (the last word may overlap the one before). */
function copyBytes(view: DataView, to: number, source: DataView, from: number, count: number): void {
  if (count < 4) {
    for (let i = 0; i < count; i++) view.setUint8(to + i, source.getUint8(from + i));
    return;
  }
  for (let i = 0; i < count - 4; i += 4) view.setInt32(to + i, source.getInt32(from + i));
  view.setInt32(to + count - 4, source.getInt32(from + count - 4));
}

/**
 * The rows, in order, as the chunks of one binary COPY (one chunk, header and trailer included, so
 * the copy data leaves in one socket write).
 *
 * @example
 * copyIn(client, 'COPY readings (building_id, room_id, metric, ts, value, payload) FROM STDIN (FORMAT binary)', binaryCopyRows(rows));
 */
export function binaryCopyRows(rows: readonly ReadingRow[]): Buffer[] {
  // Sized for ASCII first (the common batch, and no more memory than it needs); a batch with other
  // text is written again with room for any UTF-8.
  return [encodeRows(rows, 1) ?? encodeRows(rows, 3)!];
}

/** The rows in a buffer sized at `bytesPerChar` a text character; undefined if ASCII-sized and not ASCII. */
function encodeRows(rows: readonly ReadingRow[], bytesPerChar: 1 | 3): Buffer | undefined {
  const asciiOnly = bytesPerChar === 1;
  let bound = HEADER.length + TRAILER.length;
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i]!;
    // A scanned row's payload is ASCII bytes already: `{`, its members, `}`.
    const payload = r instanceof ScannedRow ? r.payloadEnd - r.payloadStart + 2 : bytesPerChar * r.payload.length;
    bound += FIXED_BYTES_PER_ROW + bytesPerChar * (r.buildingId.length + r.roomId.length + r.metric.length) + payload;
  }
  const out = Buffer.allocUnsafe(bound);
  const view = new DataView(out.buffer, out.byteOffset, out.length);
  // The body the scanned rows were read from (a batch's rows share theirs), to copy payloads from.
  let source: Buffer | undefined;
  let sourceView: DataView = view;
  let at = HEADER.copy(out, 0);
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i]!;
    view.setInt16(at, FIELDS);
    at = textField(out, view, at + 2, r.buildingId, asciiOnly);
    if (at >= 0) at = textField(out, view, at, r.roomId, asciiOnly);
    if (at >= 0) at = textField(out, view, at, r.metric, asciiOnly);
    if (at < 0) return undefined;
    const micros = postgresMicros(r.ts);
    if (!Number.isSafeInteger(micros)) throw new RangeError(`instant ${r.ts} is outside what a reading can be stored at`);
    const high = Math.floor(micros / TWO_32);
    view.setInt32(at, 8);
    view.setInt32(at + 4, high);
    view.setUint32(at + 8, micros - high * TWO_32);
    view.setInt32(at + 12, 8);
    // -0 is stored as 0, as its text was.
    view.setFloat64(at + 16, r.value === 0 ? 0 : r.value);
    at += 24;
    let length: number;
    if (r instanceof ScannedRow) {
      // `{`, the payload fields as sent (ASCII), `}`.
      if (r.source !== source) {
        source = r.source;
        sourceView = new DataView(source.buffer, source.byteOffset, source.length);
      }
      const members = r.payloadEnd - r.payloadStart;
      out[at + 5] = OPEN_BRACE;
      copyBytes(view, at + 6, sourceView, r.payloadStart, members);
      out[at + 6 + members] = CLOSE_BRACE;
      length = members + 2;
    } else {
      length = writeText(out, view, at + 5, r.payload, asciiOnly);
      if (length < 0) return undefined;
    }
    view.setInt32(at, length + 1);
    out[at + 4] = 1;
    at += 5 + length;
  }
  at += TRAILER.copy(out, at);
  return out.subarray(0, at);
}
