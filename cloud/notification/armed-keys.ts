/**
 * The cooldown keys this process armed, kept in WebAssembly beside the cooldown's own memory, and a scan
 * that settles the bulk of an alert storm without building a JavaScript value per record.
 *
 * During a storm most records repeat a key this process armed a moment ago: each is suppressed, yet
 * the general path still parses it (JSON.parse), builds its cooldown key and looks it up, about 3 µs a
 * record here. The scan (`assembly/armed-scan.ts`, compiled to `armed-scan.wasm` by `npm run
 * build:wasm`) reads a slice's records straight from their bytes and answers, per record, 1 only when
 * the record is certainly one the general path would suppress without a round trip:
 * - it is a flat JSON object of printable ASCII (no escape, no nested value, no key read twice), so it
 *   is valid UTF-8 and JSON.parse takes it;
 * - its alertId, type, field, buildingId and roomId are strings the general path takes as names (1 to
 *   256 characters, not blank: printable ASCII holds no control character or surrogate), value and
 *   threshold are numbers or null, bound a string or null, when present;
 * - its type, field, buildingId and roomId hold neither `:` nor `%`: the general path escapes those in
 *   the key (`cooldownKey`), the scan joins the names as they are, and a room `hq%3Alab` joined as it
 *   is would make the key of room `hq:lab`;
 * - its type is one of the alertable names, the set the general path checks first;
 * - its cooldown key `alert:{type}:{field}:{buildingId}:{roomId}`, byte for byte the general path's
 *   key, is remembered here with an expiry after `now`, the expiry the cooldown's memory holds.
 * Any other record answers 0 and takes the general path. `test/cloud/notification/armed-scan.test.ts`
 * holds the two paths equal on generated records.
 */
import { readFileSync } from 'node:fs';
import { ALERTABLE_METRICS } from '../../shared/catalog/metrics.js';

/** The part of the WebAssembly API used here (the project's TypeScript lib has no DOM types). */
interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
interface Wasm {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: unknown };
}
const { Module, Instance } = (globalThis as unknown as { WebAssembly: Wasm }).WebAssembly;

interface Exports {
  memory: WasmMemory;
  init(table0: number, table1: number, slots: number, arena0: number, arena1: number, bytes: number, types: number, typesBytes: number): void;
  clear(): void;
  size(): number;
  set(ptr: number, length: number, until: number, now: number): number;
  remove(ptr: number, length: number): void;
  until(ptr: number, length: number): number;
  scan(records: number, count: number, now: number, scratch: number, out: number): number;
}

const MIB = 1024 * 1024;
const SLOTS = 65_536;
const SLOT_BYTES = 32;
const ARENA_BYTES = 4 * MIB;
const TABLE_0 = 1 * MIB;
const TABLE_1 = TABLE_0 + SLOTS * SLOT_BYTES;
const ARENA_0 = TABLE_1 + SLOTS * SLOT_BYTES;
const ARENA_1 = ARENA_0 + ARENA_BYTES;
const SCRATCH = ARENA_1 + ARENA_BYTES;
/** Where a key given by the cooldown is written (a name is at most 256 characters, 768 escaped: a key fits 3.1 KiB). */
const KEY_AREA = SCRATCH + 4096;
const KEY_AREA_BYTES = 4096;
/** The alertable type names, each a length byte then its bytes. */
const TYPE_AREA = KEY_AREA + KEY_AREA_BYTES;
const TYPE_AREA_BYTES = 4096;
/** Records per scan call, and the table of their offsets and lengths. */
const RECORDS_PER_CALL = 8192;
const RECORD_TABLE = TYPE_AREA + TYPE_AREA_BYTES;
const OUT = RECORD_TABLE + RECORDS_PER_CALL * 8;
const INPUT = OUT + RECORDS_PER_CALL;
/** A record larger than this is never taken here (the general path refuses it as too large). */
const MAX_RECORD_BYTES = 64 * 1024;
const PAGE = 64 * 1024;

let compiled: object | undefined;

function module(): object {
  compiled ??= new Module(readFileSync(new URL('./armed-scan.wasm', import.meta.url)));
  return compiled;
}


export class ArmedKeys {
  private readonly wasm: Exports;
  private bytes: Uint8Array;
  private words: Uint32Array;

  /** The alertable types are those the general path takes; a record of any other type is never scanned as suppressed. */
  constructor() {
    this.wasm = new Instance(module(), {}).exports as Exports;
    this.bytes = new Uint8Array(this.wasm.memory.buffer);
    this.words = new Uint32Array(this.wasm.memory.buffer);
    this.ensure(INPUT + MIB);
    this.wasm.init(TABLE_0, TABLE_1, SLOTS, ARENA_0, ARENA_1, ARENA_BYTES, TYPE_AREA, this.writeTypes(ALERTABLE_METRICS));
  }

  /**
   * Writes the type names where the module reads them; answers how many bytes. A name that is not
   * printable ASCII or is longer than a length byte holds is left out: its records take the general path.
   */
  private writeTypes(types: readonly string[]): number {
    let at = TYPE_AREA;
    for (const type of types) {
      if (type.length > 255 || at + 1 + type.length > TYPE_AREA + TYPE_AREA_BYTES || !/^[\x20-\x7e]*$/.test(type)) continue;
      this.bytes[at] = type.length;
      for (let i = 0; i < type.length; i++) this.bytes[at + 1 + i] = type.charCodeAt(i);
      at += 1 + type.length;
    }
    return at - TYPE_AREA;
  }

  /** Grows the memory to hold `end` bytes. */
  private ensure(end: number): void {
    const have = this.wasm.memory.buffer.byteLength;
    if (end > have) this.wasm.memory.grow(Math.ceil((end - have) / PAGE));
    if (this.bytes.buffer !== this.wasm.memory.buffer) {
      this.bytes = new Uint8Array(this.wasm.memory.buffer);
      this.words = new Uint32Array(this.wasm.memory.buffer);
    }
  }

  /**
   * Writes `key` where the module reads it; its length, or undefined for a key that is not printable
   * ASCII (no record the scan takes has such a key).
   */
  private writeKey(key: string): number | undefined {
    if (key.length > KEY_AREA_BYTES) return undefined;
    const memory = this.bytes;
    for (let i = 0; i < key.length; i++) {
      const c = key.charCodeAt(i);
      if (c < 0x20 || c > 0x7e) return undefined;
      memory[KEY_AREA + i] = c;
    }
    return key.length;
  }

  /**
   * Remembers `key` as armed until `until` (performance.now() ms). A key that is not printable ASCII,
   * or one there is no room for, is not remembered: its records then take the general path.
   */
  set(key: string, until: number, now: number): void {
    const length = this.writeKey(key);
    if (length !== undefined) this.wasm.set(KEY_AREA, length, until, now);
  }

  delete(key: string): void {
    const length = this.writeKey(key);
    if (length !== undefined) this.wasm.remove(KEY_AREA, length);
  }

  /** Until when `key` is remembered as armed, or undefined. */
  until(key: string): number | undefined {
    const length = this.writeKey(key);
    if (length === undefined) return undefined;
    const until = this.wasm.until(KEY_AREA, length);
    return until < 0 ? undefined : until;
  }

  /** Keys remembered, expired ones included until they are dropped. */
  get size(): number {
    return this.wasm.size();
  }

  clear(): void {
    this.wasm.clear();
  }

  /**
   * Per record, 1 when it is certainly suppressed by a key armed here until after `now`, else 0.
   * Undefined when nothing is remembered (every record takes the general path).
   */
  scan(records: ReadonlyArray<{ value: Buffer | null }>, now: number): Uint8Array | undefined {
    if (this.wasm.size() === 0 || records.length === 0) return undefined;
    const verdicts = new Uint8Array(records.length);
    for (let start = 0; start < records.length; start += RECORDS_PER_CALL) {
      const count = Math.min(RECORDS_PER_CALL, records.length - start);
      let bytes = 0;
      for (let r = 0; r < count; r++) {
        const value = records[start + r]?.value;
        if (value && value.length <= MAX_RECORD_BYTES) bytes += value.length;
      }
      this.ensure(INPUT + bytes);
      const memory = this.bytes;
      const table = this.words;
      let at = INPUT;
      for (let r = 0; r < count; r++) {
        const value = records[start + r]?.value;
        const slot = (RECORD_TABLE >>> 2) + r * 2;
        if (!value || value.length > MAX_RECORD_BYTES) {
          table[slot] = at;
          table[slot + 1] = 0;
          continue;
        }
        memory.set(value, at);
        table[slot] = at;
        table[slot + 1] = value.length;
        at += value.length;
      }
      if (this.wasm.scan(RECORD_TABLE, count, now, SCRATCH, OUT) > 0) verdicts.set(memory.subarray(OUT, OUT + count), start);
    }
    return verdicts;
  }
}
