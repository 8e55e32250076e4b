// AssemblyScript, compiled to cloud/notification/armed-scan.wasm by `npm run build:wasm`.
//
// The cooldown keys this process armed, and a scan that tells which alert records of a slice are
// certainly suppressed by one of them: a flat JSON object of printable ASCII whose five names are
// valid, whose type, field, buildingId and roomId hold neither `:` nor `%` (the general path escapes
// those in the key; here the key is the names joined as they are), whose type is one of the alertable
// names, and whose cooldown key `alert:{type}:{field}:{buildingId}:{roomId}` is armed and not expired.
// Every other record answers 0 and takes the general path (armed-keys.ts explains why the two agree).
//
// Memory is laid out by the caller (armed-keys.ts): two tables of SLOT_BYTES slots and two key arenas
// (one of each live; the other receives a rebuild), a scratch area for one key, the alertable type
// names (each a length byte then its bytes), and the records.
// Slot: state u32 (0 empty, 1 live, 2 deleted), hash u32, key offset u32, key length u32, until f64.

const SLOT_BYTES: usize = 32;
const MAX_RECORD_BYTES: u32 = 64 * 1024;
const MAX_NAME_LENGTH: u32 = 256;

let capacity: u32 = 0;
let tables: StaticArray<usize> = [0, 0];
let arenas: StaticArray<usize> = [0, 0];
let arenaBytes: u32 = 0;
let current: i32 = 0;
let arenaUsed: u32 = 0;
let occupied: u32 = 0;
let live: u32 = 0;
/** A rebuild that freed too little waits this long (ms) before the next: keys past the room are just not kept. */
const REBUILD_INTERVAL: f64 = 1000;
let nextRebuildAt: f64 = -Infinity;
let typeNames: usize = 0;
let typeNamesEnd: usize = 0;

export function init(table0: usize, table1: usize, slots: u32, arena0: usize, arena1: usize, bytes: u32, types: usize, typesBytes: u32): void {
  typeNames = types;
  typeNamesEnd = types + <usize>typesBytes;
  tables[0] = table0;
  tables[1] = table1;
  arenas[0] = arena0;
  arenas[1] = arena1;
  capacity = slots;
  arenaBytes = bytes;
  clear();
}

export function clear(): void {
  current = 0;
  memory.fill(tables[0], 0, <usize>capacity * SLOT_BYTES);
  arenaUsed = 0;
  occupied = 0;
  live = 0;
  nextRebuildAt = -Infinity;
}

export function size(): u32 {
  return live;
}

@inline function hashOf(p: usize, n: u32): u32 {
  let h: u32 = 2166136261;
  for (let k: u32 = 0; k < n; k++) h = (h ^ <u32>load<u8>(p + k)) * 16777619;
  return h;
}

function sameBytes(a: usize, b: usize, n: u32): bool {
  let k: u32 = 0;
  while (k + 8 <= n) {
    if (load<u64>(a + k) != load<u64>(b + k)) return false;
    k += 8;
  }
  while (k < n) {
    if (load<u8>(a + k) != load<u8>(b + k)) return false;
    k++;
  }
  return true;
}

/** The slot holding the key, or -1. */
function find(p: usize, n: u32, h: u32): i32 {
  const table = tables[current];
  const arena = arenas[current];
  const mask = capacity - 1;
  let i = h & mask;
  for (let probes: u32 = 0; probes < capacity; probes++) {
    const slot = table + <usize>i * SLOT_BYTES;
    const state = load<u32>(slot);
    if (state == 0) return -1;
    if (state == 1 && load<u32>(slot, 4) == h && load<u32>(slot, 12) == n && sameBytes(arena + <usize>load<u32>(slot, 8), p, n)) return <i32>i;
    i = (i + 1) & mask;
  }
  return -1;
}

/** Copies the live, unexpired keys into the other table and arena. */
function rebuild(now: f64): void {
  const from = tables[current];
  const fromArena = arenas[current];
  const next = current ^ 1;
  const to = tables[next];
  const toArena = arenas[next];
  memory.fill(to, 0, <usize>capacity * SLOT_BYTES);
  const mask = capacity - 1;
  let used: u32 = 0;
  let count: u32 = 0;
  for (let s: u32 = 0; s < capacity; s++) {
    const slot = from + <usize>s * SLOT_BYTES;
    if (load<u32>(slot) != 1 || load<f64>(slot, 16) <= now) continue;
    const h = load<u32>(slot, 4);
    const n = load<u32>(slot, 12);
    memory.copy(toArena + used, fromArena + <usize>load<u32>(slot, 8), n);
    let i = h & mask;
    while (load<u32>(to + <usize>i * SLOT_BYTES) != 0) i = (i + 1) & mask;
    const target = to + <usize>i * SLOT_BYTES;
    store<u32>(target, 1);
    store<u32>(target, h, 4);
    store<u32>(target, used, 8);
    store<u32>(target, n, 12);
    store<f64>(target, load<f64>(slot, 16), 16);
    used += n;
    count++;
  }
  current = next;
  arenaUsed = used;
  occupied = count;
  live = count;
}

/**
 * Remembers the key at `p` (n bytes) as armed until `until`. False when there is no room even after
 * dropping the expired keys (tried at most once a second): the key is then simply not remembered here.
 */
export function set(p: usize, n: u32, until: f64, now: f64): bool {
  const h = hashOf(p, n);
  const found = find(p, n, h);
  if (found >= 0) {
    store<f64>(tables[current] + <usize>found * SLOT_BYTES, until, 16);
    return true;
  }
  if ((occupied + 1) * 4 > capacity * 3 || arenaUsed + n > arenaBytes) {
    if (now < nextRebuildAt) return false;
    rebuild(now);
    if ((occupied + 1) * 4 > capacity * 3 || arenaUsed + n > arenaBytes) {
      nextRebuildAt = now + REBUILD_INTERVAL;
      return false;
    }
  }
  const table = tables[current];
  const mask = capacity - 1;
  let i = h & mask;
  while (load<u32>(table + <usize>i * SLOT_BYTES) == 1) i = (i + 1) & mask;
  const slot = table + <usize>i * SLOT_BYTES;
  if (load<u32>(slot) == 0) occupied++;
  memory.copy(arenas[current] + arenaUsed, p, n);
  store<u32>(slot, 1);
  store<u32>(slot, h, 4);
  store<u32>(slot, arenaUsed, 8);
  store<u32>(slot, n, 12);
  store<f64>(slot, until, 16);
  arenaUsed += n;
  live++;
  return true;
}

export function remove(p: usize, n: u32): void {
  const found = find(p, n, hashOf(p, n));
  if (found < 0) return;
  store<u32>(tables[current] + <usize>found * SLOT_BYTES, 2);
  live--;
}

/** Until when the key at `p` is armed, or -1 when it is not remembered. */
export function until(p: usize, n: u32): f64 {
  const found = find(p, n, hashOf(p, n));
  return found < 0 ? -1 : load<f64>(tables[current] + <usize>found * SLOT_BYTES, 16);
}

// ---- the record scan ----

@inline function isSpace(c: u32): bool {
  return c == 0x20 || c == 0x0a || c == 0x0d || c == 0x09;
}

@inline function isDigit(c: u32): bool {
  return c - 0x30 < 10;
}

@inline function skipSpace(i: usize, end: usize): usize {
  while (i < end && isSpace(load<u8>(i))) i++;
  return i;
}

/** One past a string's closing quote (`i` at its opening quote), or 0 when it is not plain printable ASCII. */
function stringEnd(i: usize, end: usize): usize {
  i++;
  while (i < end) {
    const c = <u32>load<u8>(i);
    if (c == 0x22) return i + 1;
    if (c < 0x20 || c > 0x7e || c == 0x5c) return 0;
    i++;
  }
  return 0;
}

/** One past a JSON number at `i`, or 0 when the bytes there are not one. */
function numberEnd(i: usize, end: usize): usize {
  if (i < end && load<u8>(i) == 0x2d) i++;
  if (i >= end) return 0;
  const first = <u32>load<u8>(i);
  if (first == 0x30) i++;
  else if (isDigit(first) && first != 0x30) {
    while (i < end && isDigit(load<u8>(i))) i++;
  } else return 0;
  if (i < end && load<u8>(i) == 0x2e) {
    i++;
    if (i >= end || !isDigit(load<u8>(i))) return 0;
    while (i < end && isDigit(load<u8>(i))) i++;
  }
  if (i < end && (load<u8>(i) == 0x65 || load<u8>(i) == 0x45)) {
    i++;
    if (i < end && (load<u8>(i) == 0x2b || load<u8>(i) == 0x2d)) i++;
    if (i >= end || !isDigit(load<u8>(i))) return 0;
    while (i < end && isDigit(load<u8>(i))) i++;
  }
  return i;
}

@inline function literalAt(i: usize, end: usize, a: u32, b: u32, c: u32, d: u32): bool {
  return i + 4 <= end && load<u8>(i) == a && load<u8>(i + 1) == b && load<u8>(i + 2) == c && load<u8>(i + 3) == d;
}

const F_ALERT_ID = 0;
const F_TYPE = 1;
const F_FIELD = 2;
const F_BUILDING = 3;
const F_ROOM = 4;
const F_VALUE = 5;
const F_BOUND = 6;
const F_THRESHOLD = 7;

/** The read field named by the key bytes [p, p + n), or -1. */
function fieldOf(p: usize, n: u32): i32 {
  const c0 = <u32>load<u8>(p);
  if (n == 4) return c0 == 0x74 && load<u8>(p + 1) == 0x79 && load<u8>(p + 2) == 0x70 && load<u8>(p + 3) == 0x65 ? F_TYPE : -1; // type
  if (n == 5) {
    const rest = load<u32>(p + 1);
    if (c0 == 0x66 && rest == 0x646c6569) return F_FIELD; // f ield
    if (c0 == 0x76 && rest == 0x65756c61) return F_VALUE; // v alue
    if (c0 == 0x62 && rest == 0x646e756f) return F_BOUND; // b ound
    return -1;
  }
  if (n == 6) return c0 == 0x72 && load<u32>(p + 1) == 0x496d6f6f && load<u8>(p + 5) == 0x64 ? F_ROOM : -1; // r oomI d
  if (n == 7) return c0 == 0x61 && load<u32>(p + 1) == 0x7472656c && load<u16>(p + 5) == 0x6449 ? F_ALERT_ID : -1; // a lert Id
  if (n == 9) return load<u64>(p) == 0x6c6f687365726874 && load<u8>(p + 8) == 0x64 ? F_THRESHOLD : -1; // threshol d
  if (n == 10) return buildingId(p);
  return -1;
}

@inline function buildingId(p: usize): i32 {
  // "buildingId": 62 75 69 6c 64 69 6e 67 49 64
  return load<u64>(p) == 0x676e69646c697562 && load<u16>(p + 8) == 0x6449 ? F_BUILDING : -1;
}

@inline function isName(start: usize, stop: usize): bool {
  const n = <u32>(stop - start);
  if (n == 0 || n > MAX_NAME_LENGTH) return false;
  for (let k = start; k < stop; k++) if (load<u8>(k) != 0x20) return true;
  return false;
}

/**
 * True when the bytes [p, p + n) are one of the alertable type names. Only alertable alerts arm a key,
 * and a key names its type, but the set is checked all the same: a record of another type is never
 * the general path's to suppress.
 */
function isAlertable(p: usize, n: u32): bool {
  let at = typeNames;
  while (at < typeNamesEnd) {
    const length = <u32>load<u8>(at);
    if (length == n && sameBytes(at + 1, p, n)) return true;
    at += 1 + <usize>length;
  }
  return false;
}

/**
 * True when the bytes [start, stop) hold `:` or `%`. The general path escapes those in a cooldown key
 * (`%` as `%25`, `:` as `%3A`); joined as they are, a name holding `%3A` would make the key of a name
 * holding `:`, so such a record takes the general path.
 */
function escapedInKey(start: usize, stop: usize): bool {
  for (let k = start; k < stop; k++) {
    const c = load<u8>(k);
    if (c == 0x3a || c == 0x25) return true;
  }
  return false;
}

@inline function append(to: usize, from: usize, n: usize): usize {
  memory.copy(to, from, n);
  return to + n;
}

/**
 * 1 when the record [p, p + n) is a flat JSON object of printable ASCII, is a valid alert by every
 * rule of the general path, no part of its cooldown key holds `:` or `%`, its type is alertable, and
 * its cooldown key is armed here until after `now`; else 0. `scratch` receives the key.
 */
function suppressedHere(p: usize, n: u32, now: f64, scratch: usize): u32 {
  if (n == 0 || n > MAX_RECORD_BYTES) return 0;
  const end = p + <usize>n;
  let i = skipSpace(p, end);
  if (i >= end || load<u8>(i) != 0x7b) return 0;
  i = skipSpace(i + 1, end);
  let seen: u32 = 0;
  // Value spans of the five names (start at the first byte inside the quotes, stop at the closing quote).
  let idStart: usize = 0, idStop: usize = 0;
  let typeStart: usize = 0, typeStop: usize = 0;
  let fieldStart: usize = 0, fieldStop: usize = 0;
  let buildingStart: usize = 0, buildingStop: usize = 0;
  let roomStart: usize = 0, roomStop: usize = 0;
  if (i < end && load<u8>(i) == 0x7d) {
    i++;
  } else {
    while (true) {
      if (i >= end || load<u8>(i) != 0x22) return 0;
      const keyStop = stringEnd(i, end);
      if (keyStop == 0) return 0;
      const field = fieldOf(i + 1, <u32>(keyStop - i - 2));
      i = skipSpace(keyStop, end);
      if (i >= end || load<u8>(i) != 0x3a) return 0;
      i = skipSpace(i + 1, end);
      if (i >= end) return 0;
      if (field >= 0) {
        const bit: u32 = 1 << <u32>field;
        if (seen & bit) return 0;
        seen |= bit;
      }
      const c = <u32>load<u8>(i);
      if (c == 0x22) {
        const stop = stringEnd(i, end);
        if (stop == 0) return 0;
        // A string is right for the five names and the bound, wrong for value and threshold.
        if (field == F_VALUE || field == F_THRESHOLD) return 0;
        if (field == F_ALERT_ID) { idStart = i + 1; idStop = stop - 1; }
        else if (field == F_TYPE) { typeStart = i + 1; typeStop = stop - 1; }
        else if (field == F_FIELD) { fieldStart = i + 1; fieldStop = stop - 1; }
        else if (field == F_BUILDING) { buildingStart = i + 1; buildingStop = stop - 1; }
        else if (field == F_ROOM) { roomStart = i + 1; roomStop = stop - 1; }
        i = stop;
      } else if (c == 0x2d || isDigit(c)) {
        const stop = numberEnd(i, end);
        if (stop == 0) return 0;
        // A number is right only for value and threshold.
        if (field >= 0 && field != F_VALUE && field != F_THRESHOLD) return 0;
        i = stop;
      } else if (literalAt(i, end, 0x6e, 0x75, 0x6c, 0x6c)) {
        // null is right only for the optional fields.
        if (field >= 0 && field < F_VALUE) return 0;
        i += 4;
      } else if (literalAt(i, end, 0x74, 0x72, 0x75, 0x65)) {
        if (field >= 0) return 0;
        i += 4;
      } else if (i + 5 <= end && literalAt(i, end, 0x66, 0x61, 0x6c, 0x73) && load<u8>(i + 4) == 0x65) {
        if (field >= 0) return 0;
        i += 5;
      } else {
        return 0;
      }
      i = skipSpace(i, end);
      if (i >= end) return 0;
      const after = load<u8>(i);
      if (after == 0x2c) {
        i = skipSpace(i + 1, end);
        continue;
      }
      if (after != 0x7d) return 0;
      i++;
      break;
    }
  }
  if (skipSpace(i, end) != end) return 0;
  if ((seen & 0x1f) != 0x1f) return 0;
  if (!isName(idStart, idStop) || !isName(typeStart, typeStop) || !isName(fieldStart, fieldStop) || !isName(buildingStart, buildingStop) || !isName(roomStart, roomStop)) return 0;
  if (escapedInKey(typeStart, typeStop) || escapedInKey(fieldStart, fieldStop) || escapedInKey(buildingStart, buildingStop) || escapedInKey(roomStart, roomStop)) return 0;
  // alert:{type}:{field}:{buildingId}:{roomId}, which is the general path's key for names without `:` or `%`
  store<u32>(scratch, 0x72656c61); // "aler"
  store<u16>(scratch, 0x3a74, 4); // "t:"
  let k = scratch + 6;
  k = append(k, typeStart, typeStop - typeStart);
  store<u8>(k++, 0x3a);
  k = append(k, fieldStart, fieldStop - fieldStart);
  store<u8>(k++, 0x3a);
  k = append(k, buildingStart, buildingStop - buildingStart);
  store<u8>(k++, 0x3a);
  k = append(k, roomStart, roomStop - roomStart);
  const length = <u32>(k - scratch);
  const found = find(scratch, length, hashOf(scratch, length));
  if (found < 0 || load<f64>(tables[current] + <usize>found * SLOT_BYTES, 16) <= now) return 0;
  return isAlertable(typeStart, <u32>(typeStop - typeStart)) ? 1 : 0;
}

/**
 * Scans `count` records. `records` holds, per record, its offset and length (u32 each); `out` receives
 * one byte per record. Answers how many records are suppressed here.
 */
export function scan(records: usize, count: u32, now: f64, scratch: usize, out: usize): u32 {
  let suppressed: u32 = 0;
  for (let r: u32 = 0; r < count; r++) {
    const entry = records + <usize>r * 8;
    const verdict = capacity == 0 || live == 0 ? 0 : suppressedHere(<usize>load<u32>(entry), load<u32>(entry, 4), now, scratch);
    store<u8>(out + r, <u8>verdict);
    suppressed += verdict;
  }
  return suppressed;
}
