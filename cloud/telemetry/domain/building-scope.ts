/**
 * Which buildings an ingest key may write. A per-gateway key names its buildings, and a batch signed
 * with it that holds a reading for any other building is refused whole. The shared ring, and a
 * per-gateway key made before keys named buildings, may write any building.
 */
import { CONTROL_CHARACTERS, MAX_NAME_LENGTH, describeValue } from '../../../shared/kinds.js';
import { MAX_REPORTED_ERRORS, type ReadingError } from './batch.js';

/** 'any': the shared ring, or a key from before keys named buildings. A set: exactly those. */
export type BuildingScope = 'any' | ReadonlySet<string>;

/** The key a batch was signed with, as ingest sees it: the batch-id scope and the buildings. */
export interface IngestKeyScope {
  /** '' for the shared ring. */
  keyId: string;
  buildings: BuildingScope;
}

/** At most this many buildings per key; a gateway serves a site, not a fleet. */
export const MAX_KEY_BUILDINGS = 1000;

export type BuildingListCheck = { ok: true; buildingIds: string[] } | { ok: false; problems: string[] };

/**
 * Checks the buildings a key is given, reporting every problem with its position (`label[i]`): at
 * least one; each a building id as readings carry it, matched exactly, so no surrounding whitespace;
 * none named twice.
 */
export function checkBuildingList(values: readonly unknown[], label = 'buildings'): BuildingListCheck {
  if (values.length === 0) return { ok: false, problems: [`${label}: name at least one building the key may write`] };
  const problems: string[] = [];
  if (values.length > MAX_KEY_BUILDINGS) problems.push(`${label}: at most ${MAX_KEY_BUILDINGS} buildings per key, got ${values.length}`);
  const seen = new Map<string, number>();
  values.forEach((value, i) => {
    const path = `${label}[${i}]`;
    if (typeof value !== 'string') {
      problems.push(`${path}: expected a building id, got ${describeValue(value)}`);
      return;
    }
    const problem = buildingIdProblem(value);
    if (problem) problems.push(`${path}: ${problem}`);
    else if (seen.has(value)) problems.push(`${path}: ${JSON.stringify(value)} is already named at ${label}[${seen.get(value)}]`);
    else seen.set(value, i);
  });
  return problems.length > 0 ? { ok: false, problems } : { ok: true, buildingIds: [...seen.keys()] };
}

/**
 * Why `id` cannot name a building of a key, or undefined: the rules of a reading's building id (the
 * NonEmptyString kind), each with its own message, and no surrounding whitespace, since ids are
 * matched exactly and a stray space on the command line would confine the key to no real building.
 */
function buildingIdProblem(id: string): string | undefined {
  if (id.trim() === '') return `expected a building id, got ${id === '' ? 'an empty string' : 'only whitespace'}`;
  if (id.length > MAX_NAME_LENGTH) return `a building id has at most ${MAX_NAME_LENGTH} characters, got ${id.length}`;
  if (id.includes('\u0000')) return `${describeValue(id)} holds NUL (\\u0000), which no reading's building id can`;
  if (CONTROL_CHARACTERS.test(id)) return `${describeValue(id)} holds a control character, which no reading's building id can`;
  if (id.trim() !== id) return `${JSON.stringify(id)} has surrounding whitespace; building ids are matched exactly`;
  return undefined;
}

/**
 * The readings of a batch whose `buildingId` the scope does not allow, in batch order. Readings
 * without a string `buildingId` are left to validation (they are refused there).
 */
export function readingsOutside(readings: readonly unknown[], scope: BuildingScope): Array<{ index: number; buildingId: string }> {
  if (scope === 'any') return [];
  const outside: Array<{ index: number; buildingId: string }> = [];
  readings.forEach((reading, index) => {
    const buildingId = reading !== null && typeof reading === 'object' ? (reading as { buildingId?: unknown }).buildingId : undefined;
    if (typeof buildingId === 'string' && !scope.has(buildingId)) outside.push({ index, buildingId });
  });
  return outside;
}

/**
 * The 403 answer for a batch with readings outside its key's buildings. Building ids are quoted as
 * sent, shortened (they are not validated yet); the key's own buildings are never listed.
 */
export function outsideScopeAnswer(keyId: string, total: number, outside: ReadonlyArray<{ index: number; buildingId: string }>): { message: string; errors: ReadingError[] } {
  const first = outside[0]!;
  const message =
    outside.length === 1
      ? `key ${keyId} may not write building ${describeValue(first.buildingId)} (reading ${first.index}); nothing was stored`
      : `${outside.length} of ${total} readings are for buildings key ${keyId} may not write (first: reading ${first.index}, building ${describeValue(first.buildingId)}); nothing was stored`;
  const errors = outside.slice(0, MAX_REPORTED_ERRORS).map(({ index, buildingId }) => ({
    index,
    field: 'buildingId',
    message: `building ${describeValue(buildingId)} is not one of the buildings of key ${keyId}`,
  }));
  return { message, errors };
}
