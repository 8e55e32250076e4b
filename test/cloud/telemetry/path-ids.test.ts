/**
 * Building and room ids in a route's path follow the rule readings carry them by (NonEmptyString): one
 * that no reading could carry, such as one holding NUL, is a 400 before the directory is asked, never
 * a 500 from PostgreSQL, which stores no NUL in text.
 */
import t from 'tap';
import { callAs, countRows, startHarness } from './support/harness.js';

const system = { sub: 'system:digital-twin' };

t.test('an id in the path that no reading could carry is 400, before the directory is asked', async (t) => {
  // The fake directory is set up for no building: asking it about one fails the test at teardown.
  const h = await startHarness(t);
  const long = 'b'.repeat(257);
  const cases: Array<[string, string, unknown, string]> = [
    ['PATCH', '/thresholds/temperature/buildings/b%00x/rooms', { r1: { maxTemperature: 26 } }, 'id'],
    ['PUT', '/thresholds/buildings/b%00x', { temperature: { maxTemperature: 26 } }, 'id'],
    ['PUT', `/thresholds/buildings/${long}`, { temperature: { maxTemperature: 26 } }, 'id'],
    ['PUT', '/thresholds/buildings/%20', { temperature: { maxTemperature: 26 } }, 'id'],
    ['GET', '/sensors/buildings/b%0Ax/rooms/r1', undefined, 'buildingId'],
    ['GET', '/sensors/buildings/b1/rooms/r%00', undefined, 'roomId'],
  ];
  for (const [method, path, body, field] of cases) {
    const answer = await callAs(h, system, method, path, body);
    t.equal(answer.status, 400, `${method} ${path.slice(0, 60)}: ${answer.text.slice(0, 120)}`);
    t.match(answer.json, { type: 'Validation Error', errors: [{ field }] });
  }
  t.equal(await countRows(h.pool, 'thresholds'), 0, 'nothing stored');
});
