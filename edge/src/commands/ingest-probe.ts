/**
 * Doctor's ingest probe: one signed batch that the telemetry ingest refuses only past both checks every
 * batch of the collector must pass, so its answer says which of them would refuse the collector.
 *
 * The ingest verifies the signature over the exact bytes (403 text/plain `invalid signature`), then
 * refuses a batch holding a reading of a building its key may not write (403 JSON, its errors naming
 * `buildingId`), then validates every reading (cloud/telemetry/ingest.ts). The probe's one reading is
 * one the collector sends (a totalDeviceCount of 0, for the config's building and first zone), dated
 * 2001-01-01: long before the raw readings the ingest keeps (14 days, CONTRACTS.md), so past both checks
 * it is refused as too old (400, its only error naming `timestamp`) and nothing is stored. An empty batch,
 * the probe before, was refused for its shape before the building was looked at: a key bound to another
 * building passed doctor, and the collector's every batch was then refused.
 *
 * It is posted by the collector's own poster, which hands back its outcome (recorded in the ledger, as
 * for any batch) and the answer's text: the verdict rests on the answer's errors.
 */
import type { EdgeConfig } from '../config/load.js';
import { redactIdentifiers } from '../report/identifiers.js';
import { acceptedCountOf, createBatchPoster, reasonOf, type PostOutcome } from '../report/poster.js';
import { printableLine } from '../ui/printable.js';
import { shellWord } from '../ui/shell-word.js';

/** When the probe's reading is dated: inside the ledger audit's plausible times (2000–2100), and long gone from any ingest. */
export const PROBE_READING_TIME = Date.UTC(2001, 0, 1);

/** Errors of an unexpected refusal shown on the line. */
const SHOWN_ERRORS = 3;

/** The longest refusal shown on the line. */
const MAX_REFUSAL = 300;

/**
 * How the ingest answered the probe: the poster's outcome, which the ledger records as the probe's
 * delivery, with the answer's text and Date header when there was one.
 */
export type ProbeAnswer =
  | { outcome: 'accepted' | 'rejected'; status: number; body: string; serverDate?: string }
  | Extract<PostOutcome, { outcome: 'unreachable' }>;

/** What an answer means for the collector: whether its batches would be taken, in words for doctor's line. */
export interface ProbeVerdict {
  ok: boolean;
  text: string;
}

/** One problem of a JSON error answer (CONTRACTS.md: `{type, message, errors: [{index, field, message}]}`). */
interface AnswerError {
  field?: unknown;
  message?: unknown;
}

/**
 * The probe batch, as the exact bytes that are recorded in the ledger and posted: canonical JSON of a
 * reading the collector sends, so `ledger audit` passes it like any batch.
 *
 * @example
 * probeBody({ buildingId: 'hq', zones: [{ id: 'lobby' }] }, Date.UTC(2026, 0, 1));
 * // '{"batchId":"doctor-2026-01-01T00:00:00.000Z","readings":[{"type":"totalDeviceCount","buildingId":"hq","roomId":"lobby","timestamp":978307200000,"totalDeviceCount":0}]}'
 */
export function probeBody(config: Pick<EdgeConfig, 'buildingId' | 'zones'>, now: number): string {
  const reading = { type: 'totalDeviceCount', buildingId: config.buildingId, roomId: config.zones[0]!.id, timestamp: PROBE_READING_TIME, totalDeviceCount: 0 };
  return JSON.stringify({ batchId: `doctor-${new Date(now).toISOString()}`, readings: [reading] });
}

/** Posts the probe with the collector's poster, signed as its batches are; never throws. */
export async function sendProbe(ingest: NonNullable<EdgeConfig['ingest']>, body: string): Promise<ProbeAnswer> {
  const poster = createBatchPoster({ url: ingest.url, secret: ingest.secret, ...(ingest.keyId ? { keyId: ingest.keyId } : {}), timeoutMs: ingest.timeoutMs, withAnswer: true });
  try {
    const posted = await poster.post(body);
    if (posted.outcome === 'unreachable') return posted;
    const { body: text = '', serverDate } = posted.answer ?? {};
    return { outcome: posted.outcome, status: posted.status, body: text, ...(serverDate ? { serverDate } : {}) };
  } finally {
    await poster.close();
  }
}

/** The JSON object of an answer, or undefined for any other body (a bad signature's plain text, a proxy's page). */
function jsonOf(body: string): { message?: unknown; errors?: unknown } | undefined {
  try {
    const parsed: unknown = JSON.parse(body);
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

function errorsOf(json: { errors?: unknown } | undefined): AnswerError[] {
  return Array.isArray(json?.errors) ? json.errors.filter((e): e is AnswerError => e !== null && typeof e === 'object') : [];
}

/**
 * A refusal as the ingest worded it: the poster's reason (its message, or its text), and the fields its
 * first errors name. On one printable line without identifiers, as everything doctor prints; the reason
 * is taken whole and the line cut only once they are redacted, so no cut identifier escapes redaction.
 */
function refusalOf(answer: { body: string }): string {
  const fields = errorsOf(jsonOf(answer.body))
    .slice(0, SHOWN_ERRORS)
    .map((e) => `${String(e.field)}: ${String(e.message)}`);
  const line = redactIdentifiers(printableLine([reasonOf(answer.body, Infinity), ...fields].join('; ')));
  return line.length > MAX_REFUSAL ? `${line.slice(0, MAX_REFUSAL)}…` : line;
}

/**
 * What the ingest's answer to the probe says of the collector's batches. Passes only when the probe went
 * past the signature and the building check: a 400 whose errors name only the reading's timestamp, or an
 * ingest that kept the reading (2xx `{accepted}`; the telemetry service never does, for one this old).
 * A building refused names the `keys-cli.ts bind` command that lets the key write it, its values quoted
 * for the shell: a building id may hold a space.
 */
export function probeVerdict(answer: ProbeAnswer, buildingId: string, keyId: string | undefined): ProbeVerdict {
  if (answer.outcome === 'unreachable') return { ok: false, text: `reachable ✗ (${answer.reason})` };
  const { status } = answer;
  const json = jsonOf(answer.body);
  const errors = errorsOf(json);
  const building = JSON.stringify(buildingId);
  if (status === 400 && errors.length > 0 && errors.every((e) => e.field === 'timestamp')) {
    return { ok: true, text: `reachable ✓  signature accepted ✓  building ${building} accepted ✓ (400: the probe's reading, dated 2001, refused as older than the data kept; nothing stored)` };
  }
  if (status >= 200 && status < 300 && acceptedCountOf(answer.body) !== undefined) {
    return { ok: true, text: `reachable ✓  signature accepted ✓  building ${building} accepted ✓ (${status}: this ingest kept the probe's reading, 0 devices on 2001-01-01)` };
  }
  if (status === 403 && errors.some((e) => e.field === 'buildingId')) {
    const key = keyId ? `key ${keyId}` : 'the shared key (no ingest.keyId)';
    return {
      ok: false,
      text:
        `reachable ✓  signature accepted ✓  building refused ✗: ${key} may not write building ${building} (buildingId in the config), so every batch would be refused. ` +
        `Correct buildingId, or have the key bound to it on the telemetry service: keys-cli.ts bind ${keyId ? shellWord(keyId) : '<keyId>'} --building ${shellWord(buildingId)} (naming its other buildings too: bind replaces them)`,
    };
  }
  if (status === 403 && json === undefined) return { ok: false, text: 'reachable ✓  signature refused ✗ (check ingest.secretFile and ingest.keyId)' };
  if (status === 404) return { ok: false, text: 'no ingest at this URL ✗ (404)' };
  return { ok: false, text: `reachable ✓  probe refused ✗ (${status} ${refusalOf(answer)})` };
}
