/**
 * The fast path of ingest: a batch body in canonical form is read straight from its bytes, without
 * JSON.parse and without building the readings as objects.
 *
 * Canonical is what JSON.stringify writes for a valid batch whose readings list `type` first and then
 * their declared fields in declaration order: no whitespace, `readings` and an optional `batchId` (in
 * either order), strings of printable ASCII without `"` or `\`, each a valid name (not starting with
 * a space, at most 256 characters), and numbers in the shortest form JavaScript prints (at most 15
 * significant digits, no exponent, no trailing fraction zero, no `-0`). Every reading is valid for its
 * declaration and dated within what can be stored. Such a reading's bytes are exactly its browser
 * view as the general path serialises it, so the readings array as sent is the Redis messages, and
 * the bytes after its value field are its payload.
 *
 * Anything else (any other order, an escape, whitespace, `null`, an invalid or out-of-range reading,
 * a batch too large or empty) answers undefined, and the batch takes the general path: JSON.parse,
 * validation, and its error answers. The fast path never decides a refusal.
 */
import type { FieldSpec, MetricDeclaration } from '../../../shared/catalog/declaration.js';
import { METRICS } from '../../../shared/catalog/metrics.js';
import type { BatchLimits, ReadingRow } from './batch.js';

/** A canonical batch, read. */
export interface CanonicalBatch {
  batchId: string | undefined;
  /** One row per reading, in batch order. */
  rows: ReadingRow[];
  /** The metrics of the batch that declare bounds, in order of first appearance. */
  boundedMetrics: string[];
  /** The readings array as sent, `[m0,m1,…]`: each element is its reading's message. */
  messages: Buffer;
  /** Where each reading starts in `messages`. */
  starts: number[];
}

/**
 * A row read from a canonical body. Its payload is still bytes of the body: `{`, then
 * `source[payloadStart, payloadEnd)` (the payload fields as sent, next to each other), then `}`. The
 * binary COPY copies those bytes; `payload` makes the text when it is asked for (alerts from
 * thresholds, the batch written again keeping the first copies).
 */
export class ScannedRow implements ReadingRow {
  constructor(
    readonly buildingId: string,
    readonly roomId: string,
    readonly metric: string,
    readonly ts: number,
    readonly value: number,
    readonly fromRoomId: string,
    readonly source: Buffer,
    readonly payloadStart: number,
    readonly payloadEnd: number,
  ) {}

  get payload(): string {
    return `{${this.source.toString('latin1', this.payloadStart, this.payloadEnd)}}`;
  }
}

const QUOTE = 0x22;
const COMMA = 0x2c;
const MINUS = 0x2d;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const BACKSLASH = 0x5c;

/** Longest name a NonEmptyString holds (kinds.ts MAX_NAME_LENGTH). */
const MAX_NAME = 256;
/** Significant digits a canonical number may carry: any such decimal is the double's shortest form. */
const MAX_DIGITS = 15;
const POWERS_OF_TEN = Array.from({ length: 23 }, (_, k) => 10 ** k);

/**
 * Bytes expected at a position, compared four at a time: as big-endian 32-bit words from the start,
 * the last word overlapping the one before when the length is not a multiple of four.
 */
class Pattern {
  readonly length: number;
  private readonly words: Int32Array;

  constructor(bytes: Buffer) {
    if (bytes.length < 4) throw new RangeError('a pattern is at least four bytes long');
    this.length = bytes.length;
    const count = Math.ceil(bytes.length / 4);
    this.words = Int32Array.from({ length: count }, (_, i) => bytes.readInt32BE(Math.min(4 * i, bytes.length - 4)));
  }

  /** Whether the bytes at `at` are this pattern. */
  at(view: DataView, at: number): boolean {
    const { length, words } = this;
    if (at + length > view.byteLength) return false;
    const last = words.length - 1;
    for (let i = 0; i < last; i++) if (view.getInt32(at + 4 * i) !== words[i]) return false;
    return view.getInt32(at + length - 4) === words[last];
  }
}

type Role = 'building' | 'room' | 'timestamp' | 'value' | 'payload';

interface FieldPlan {
  /** `"name":`. */
  key: Pattern;
  kind: FieldSpec['kind'];
  role: Role;
  origin: boolean;
}

interface MetricPlan {
  metric: MetricDeclaration;
  /** Its position in PLANS. */
  index: number;
  /** How its readings open: `{"type":"<key>"`. */
  head: Pattern;
  fields: FieldPlan[];
  /** One bit per required field, by position. */
  required: number;
  bounded: boolean;
}

function planOf(metric: MetricDeclaration): Omit<MetricPlan, 'index'> | undefined {
  // A declaration this path cannot read as planned takes the general path (none in the catalog).
  if (metric.fields.length > 30 || metric.fields.some((f) => f.name === 'type' || f.name === '')) return undefined;
  let required = 0;
  const fields = metric.fields.map((f, i): FieldPlan => {
    if (f.required) required |= 1 << i;
    const role: Role =
      f.name === 'buildingId' ? 'building' : f.name === 'roomId' ? 'room' : f.name === 'timestamp' ? 'timestamp' : f.name === metric.value_field ? 'value' : 'payload';
    return { key: new Pattern(Buffer.from(`${JSON.stringify(f.name)}:`, 'latin1')), kind: f.kind, role, origin: role === 'payload' && f.name === 'fromRoomId' };
  });
  return { metric, head: new Pattern(Buffer.from(`{"type":"${metric.key}"`, 'latin1')), fields, required, bounded: metric.bounds.length > 0 };
}

const PLANS: readonly MetricPlan[] = Object.values(METRICS)
  .flatMap((m) => planOf(m) ?? [])
  .map((plan, index) => ({ ...plan, index }));
const READINGS_KEY = new Pattern(Buffer.from('"readings":', 'latin1'));
const BATCH_ID_KEY = new Pattern(Buffer.from('"batchId":', 'latin1'));

/**
 * The end (the closing quote) of the canonical name string opening at `at`, or -1: printable ASCII
 * without `"` or `\`, not starting with a space, 1 to 256 characters.
 */
function nameEnd(body: Buffer, at: number): number {
  if (body[at] !== QUOTE) return -1;
  const first = body[at + 1]!;
  if (first <= 0x20 || first > 0x7e || first === QUOTE || first === BACKSLASH) return -1;
  const limit = Math.min(body.length, at + 2 + MAX_NAME);
  for (let p = at + 2; p < limit; p++) {
    const b = body[p]!;
    if (b === QUOTE) return p;
    if (b < 0x20 || b > 0x7e || b === BACKSLASH) return -1;
  }
  return -1;
}

/** Reads the canonical number at `at` into `number`; answers its end, or -1. */
function numberEnd(body: Buffer, at: number, out: { value: number; integer: boolean }): number {
  let p = at;
  const negative = body[p] === MINUS;
  if (negative) p++;
  let b = body[p];
  if (b === undefined || b < ZERO || b > NINE) return -1;
  let mantissa = 0;
  let significant = 0;
  if (b === ZERO) {
    p++;
  } else {
    while (b !== undefined && b >= ZERO && b <= NINE) {
      mantissa = mantissa * 10 + (b - ZERO);
      significant++;
      b = body[++p];
    }
  }
  let fraction = 0;
  if (body[p] === DOT) {
    p++;
    b = body[p];
    let leadingZeros = significant === 0;
    let zeros = 0;
    while (b !== undefined && b >= ZERO && b <= NINE) {
      mantissa = mantissa * 10 + (b - ZERO);
      fraction++;
      if (leadingZeros && b === ZERO) zeros++;
      else {
        leadingZeros = false;
        significant++;
      }
      b = body[++p];
    }
    // No digit, a trailing zero, or a value under 1e-6 (which JavaScript prints with an exponent).
    if (fraction === 0 || body[p - 1] === ZERO || zeros > 5) return -1;
  } else if (negative && significant === 0) {
    return -1; // -0 prints as 0
  }
  b = body[p];
  if (significant > MAX_DIGITS || b === 0x65 || b === 0x45 || (b !== undefined && b >= ZERO && b <= NINE)) return -1;
  // Exact: the mantissa is below 2^53 and 10^fraction (fraction ≤ 20) is exact, so one division rounds
  // as parsing the decimal would.
  const magnitude = fraction === 0 ? mantissa : mantissa / POWERS_OF_TEN[fraction]!;
  out.value = negative ? -magnitude : magnitude;
  out.integer = fraction === 0;
  return p;
}

/** Whether the `length` bytes at `a` and at `b` are the same, compared four at a time. */
function sameBytes(view: DataView, a: number, b: number, length: number): boolean {
  if (length < 4) {
    for (let i = 0; i < length; i++) if (view.getUint8(a + i) !== view.getUint8(b + i)) return false;
    return true;
  }
  for (let i = 0; i < length - 4; i += 4) if (view.getInt32(a + i) !== view.getInt32(b + i)) return false;
  return view.getInt32(a + length - 4) === view.getInt32(b + length - 4);
}

/** A name met in a batch: its text, and where in the body its bytes were first. */
interface Name {
  text: string;
  at: number;
}

/** A per-batch table of the names met, so a building or room named by many readings is one string. */
class Names {
  private readonly byHash = new Map<number, Name>();
  /** The name met last, checked first: a batch's readings mostly share their building. */
  private last: Name = { text: '', at: 0 };

  constructor(
    private readonly body: Buffer,
    private readonly view: DataView,
  ) {}

  /** The text of body[start, end) (printable ASCII, at least one character). */
  text(start: number, end: number): string {
    const { view, last } = this;
    const length = end - start;
    if (last.text.length === length && sameBytes(view, start, last.at, length)) return last.text;
    const name = this.lookUp(start, end);
    this.last = name;
    return name.text;
  }

  private lookUp(start: number, end: number): Name {
    const { view } = this;
    const length = end - start;
    let hash = 0x811c9dc5 ^ length;
    if (length < 4) {
      for (let p = start; p < end; p++) hash = Math.imul(hash ^ view.getUint8(p), 0x01000193);
    } else {
      for (let p = start; p < end - 4; p += 4) hash = Math.imul(hash ^ view.getInt32(p), 0x01000193);
      hash = Math.imul(hash ^ view.getInt32(end - 4), 0x01000193);
    }
    const known = this.byHash.get(hash);
    if (known !== undefined && known.text.length === length && sameBytes(view, start, known.at, length)) return known;
    const name = { text: this.body.toString('latin1', start, end), at: start };
    if (known === undefined) this.byHash.set(hash, name);
    return name;
  }
}

/**
 * Reads a batch body in canonical form; undefined for any other body (it takes the general path).
 * `now` and `limits` are those of validation: a reading dated out of range is not canonical.
 *
 * @example
 * scanCanonicalBatch(Buffer.from('{"readings":[{"type":"peopleCount","buildingId":"b","roomId":"r","timestamp":1700000000000,"peopleCount":3}]}'), now);
 * // { batchId: undefined, rows: [{ buildingId: 'b', …, payload: '{}' }], messages: <the readings array>, starts: [1], … }
 */
export function scanCanonicalBatch(body: Buffer, now: number, limits: BatchLimits): CanonicalBatch | undefined {
  if (body[0] !== OPEN_BRACE) return undefined;
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  let p = 1;
  let batchId: string | undefined;
  let readings: Omit<CanonicalBatch, 'batchId'> | undefined;
  for (;;) {
    if (readings === undefined && READINGS_KEY.at(view, p)) {
      p += READINGS_KEY.length;
      const found = scanReadings(body, view, p, now, limits);
      if (found === undefined) return undefined;
      readings = found.batch;
      p = found.end;
    } else if (batchId === undefined && BATCH_ID_KEY.at(view, p)) {
      p += BATCH_ID_KEY.length;
      const end = nameEnd(body, p);
      if (end < 0) return undefined;
      batchId = body.toString('latin1', p + 1, end);
      p = end + 1;
    } else {
      return undefined;
    }
    if (body[p] === COMMA) {
      p++;
      continue;
    }
    if (body[p] === CLOSE_BRACE && p === body.length - 1 && readings !== undefined) return { batchId, ...readings };
    return undefined;
  }
}

function scanReadings(body: Buffer, view: DataView, at: number, now: number, limits: BatchLimits): { batch: Omit<CanonicalBatch, 'batchId'>; end: number } | undefined {
  if (body[at] !== OPEN_BRACKET) return undefined;
  const oldest = now - limits.retentionMs;
  const latest = now + limits.maxFutureMs;
  const buildings = new Names(body, view);
  const rooms = new Names(body, view);
  const rows: ReadingRow[] = [];
  const starts: number[] = [];
  const bounded: string[] = [];
  const noted = new Uint8Array(PLANS.length);
  const number = { value: 0, integer: true };
  let p = at + 1;
  for (;;) {
    if (rows.length >= limits.maxReadings) return undefined;
    let plan: MetricPlan | undefined;
    for (let i = 0; i < PLANS.length; i++) {
      const candidate = PLANS[i]!;
      if (body[p + candidate.head.length - 1] === QUOTE && candidate.head.at(view, p)) {
        plan = candidate;
        break;
      }
    }
    if (plan === undefined) return undefined;
    starts.push(p - at);
    p += plan.head.length;
    let seen = 0;
    let next = 0;
    let buildingId = '';
    let roomId = '';
    let ts = Number.NaN;
    let value = Number.NaN;
    let payloadStart = -1;
    let payloadEnd = -1;
    let joined = '';
    let fromRoomId = '';
    const fields = plan.fields;
    while (body[p] === COMMA) {
      const keyAt = p + 1;
      let index = next;
      while (index < fields.length && !fields[index]!.key.at(view, keyAt)) index++;
      if (index === fields.length) return undefined;
      const field = fields[index]!;
      next = index + 1;
      seen |= 1 << index;
      const valueAt = keyAt + field.key.length;
      let end: number;
      if (field.kind === 'NonEmptyString') {
        const close = nameEnd(body, valueAt);
        if (close < 0) return undefined;
        end = close + 1;
        if (field.role === 'building') buildingId = buildings.text(valueAt + 1, close);
        else if (field.role === 'room') roomId = rooms.text(valueAt + 1, close);
        else if (field.origin) fromRoomId = rooms.text(valueAt + 1, close);
      } else {
        if (field.kind !== 'Finite' && field.kind !== 'NonNegativeInt') return undefined;
        end = numberEnd(body, valueAt, number);
        if (end < 0 || (field.kind === 'NonNegativeInt' && (!number.integer || number.value < 0))) return undefined;
        if (field.role === 'timestamp') ts = number.value;
        else if (field.role === 'value') value = number.value;
      }
      if (field.role === 'payload') {
        // Payload fields are kept as sent; those not next to each other are joined as text.
        if (payloadStart < 0) payloadStart = keyAt;
        else if (payloadEnd !== p) {
          joined += `${body.toString('latin1', payloadStart, payloadEnd)},`;
          payloadStart = keyAt;
        }
        payloadEnd = end;
      }
      p = end;
    }
    if (body[p] !== CLOSE_BRACE || (seen & plan.required) !== plan.required) return undefined;
    if (!(ts >= oldest && ts <= latest) || Number.isNaN(value)) return undefined;
    p++;
    const metric = plan.metric.key;
    if (joined !== '') {
      const payload = `{${joined}${body.toString('latin1', payloadStart, payloadEnd)}}`;
      rows.push({ buildingId, roomId, metric, ts, value, payload, fromRoomId });
    } else {
      if (payloadStart < 0) payloadStart = payloadEnd = p;
      rows.push(new ScannedRow(buildingId, roomId, metric, ts, value, fromRoomId, body, payloadStart, payloadEnd));
    }
    if (plan.bounded && noted[plan.index] === 0) {
      noted[plan.index] = 1;
      bounded.push(metric);
    }
    if (body[p] === COMMA) {
      p++;
      continue;
    }
    if (body[p] !== CLOSE_BRACKET) return undefined;
    return { batch: { rows, boundedMetrics: bounded, messages: body.subarray(at, p + 1), starts }, end: p + 1 };
  }
}
