/**
 * An ingest batch's 400 for unknown envelope keys lists a capped number of them and never echoes a
 * key whole (shared/errors.ts: "enough to mend a request, never an amplifier"): a signed body of
 * thousands of keys, or of one very long key, gets a short answer that counts the rest.
 */
import t from 'tap';
import { MAX_REPORTED_ERRORS } from '../../../cloud/telemetry/domain/batch.js';
import { postSigned, startHarness, temperatureReading } from './support/harness.js';

const LONG_KEY = `k${'x'.repeat(10_000 - 1)}`;
const UNKNOWN_KEYS = 1000;

interface ReadingError {
  index: number | null;
  field: string;
  message: string;
}

t.test('1,000 unknown envelope keys, one of them 10,000 characters long, get a short 400 counting the rest', async (t) => {
  const h = await startHarness(t);
  const body: Record<string, unknown> = { [LONG_KEY]: 0 };
  for (let i = 1; i < UNKNOWN_KEYS; i++) body[`k${i}`] = i;
  body.readings = [temperatureReading('b1', 'r1', h.clock.now, 20)];
  const text = JSON.stringify(body);

  const answer = await postSigned(h, text);
  t.equal(answer.status, 400);
  const json = answer.json as { message: string; errors: ReadingError[] };
  t.ok(json.errors.length <= MAX_REPORTED_ERRORS, `at most ${MAX_REPORTED_ERRORS} errors (got ${json.errors.length})`);
  t.equal(json.errors.length, MAX_REPORTED_ERRORS, 'the cap, all of them unknown keys');
  t.same(json.errors[0], { index: null, field: `${LONG_KEY.slice(0, 64)}…`, message: 'not a batch field (batchId, readings)' }, 'the long key is named by its start');
  t.notOk(answer.text.includes(LONG_KEY), 'the 10,000-character key is not echoed whole');
  t.ok(json.errors.every((e) => e.field.length <= 65), 'every field shown is cut to 64 characters');
  t.equal(json.message, `the batch is malformed; nothing was stored (the first ${MAX_REPORTED_ERRORS} of ${UNKNOWN_KEYS} unknown keys are listed)`, 'the count of the rest');
  t.ok(answer.text.length * 2 < text.length, `the answer (${answer.text.length} B) is smaller than the request (${text.length} B)`);
});

t.test('the cap leaves room for the envelope problems beside the unknown keys', async (t) => {
  const h = await startHarness(t);
  const body: Record<string, unknown> = { batchId: '', readings: [] };
  for (let i = 0; i < UNKNOWN_KEYS; i++) body[`k${i}`] = i;

  const answer = await postSigned(h, body);
  t.equal(answer.status, 400);
  const json = answer.json as { message: string; errors: ReadingError[] };
  t.equal(json.errors.length, MAX_REPORTED_ERRORS, 'never more than the cap');
  t.same(
    json.errors.slice(-2).map((e) => e.field),
    ['batchId', 'readings'],
    'the problems of batchId and readings are listed after the unknown keys',
  );
  t.equal(json.message, `the batch is malformed; nothing was stored (the first ${MAX_REPORTED_ERRORS - 2} of ${UNKNOWN_KEYS} unknown keys are listed)`);
});

t.test('a few unknown envelope keys are each listed whole, with no count', async (t) => {
  const h = await startHarness(t);
  const answer = await postSigned(h, { readings: [temperatureReading('b1', 'r1', h.clock.now, 20)], gateway: 'gw-1', sentAt: 1 });
  t.equal(answer.status, 400);
  t.same(answer.json, {
    type: 'Validation Error',
    message: 'the batch is malformed; nothing was stored',
    errors: [
      { index: null, field: 'gateway', message: 'not a batch field (batchId, readings)' },
      { index: null, field: 'sentAt', message: 'not a batch field (batchId, readings)' },
    ],
  });
});
