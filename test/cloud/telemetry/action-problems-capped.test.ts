/**
 * POST /executeAction's 400 lists a capped number of problems and never echoes a caller's key whole
 * (shared/errors.ts: "enough to mend a request, never an amplifier"): neither for unknown command
 * fields, which are refused before the edit check, nor for undeclared arguments the kernel refuses.
 */
import t, { type Test } from 'tap';
import { MAX_REPORTED_PROBLEMS } from '../../../shared/errors.js';
import { callAs } from './support/harness.js';
import { startThermostatBuilding } from './support/thermostat-building.js';

const manager = { sub: 'u-fm', accountName: 'fm@acme.test', memberships: [{ domainName: 'acme', role: 'facility_manager' }] };
const viewer = { sub: 'u-v', accountName: 'v@acme.test', memberships: [{ domainName: 'acme', role: 'viewer' }] };

const command = { metric: 'temperature', buildingId: 'b1', roomId: 'r1', sensorId: 'stat-ok', action: 'setTarget', arguments: { target: 21.5 } };
const LONG_KEY = `k${'x'.repeat(10 * 1024)}`;

/** 5,000 keys no command or action declares, one of them 10 KiB long. */
function manyUnknownKeys(): Record<string, number> {
  const keys: Record<string, number> = { [LONG_KEY]: 1 };
  for (let i = 1; i < 5000; i++) keys[`extra-${i}`] = i;
  return keys;
}

interface Problem {
  field: string;
  message: string;
}

/** The answer is a short 400: at most the cap of problems, then one counting the rest, no key whole. */
function checkCapped(t: Test, answer: { status: number; text: string; json: unknown }, requestBytes: number, message: string) {
  t.equal(answer.status, 400);
  const body = answer.json as { type: string; message: string; errors: Problem[] };
  t.equal(body.message, message);
  t.equal(body.errors.length, MAX_REPORTED_PROBLEMS + 1, 'the cap of problems, then one counting the rest');
  t.same(body.errors.at(-1), { field: '(more)', message: `and ${5000 - MAX_REPORTED_PROBLEMS} more` });
  t.notOk(answer.text.includes(LONG_KEY), 'the 10 KiB key is not echoed whole');
  t.ok(body.errors.every((e) => e.field.length <= 65), 'every field shown is cut to 64 characters');
  t.match(body.errors[0], { field: `${LONG_KEY.slice(0, 64)}…` }, 'the long key is named by its start');
  t.ok(answer.text.length * 10 < requestBytes, `the answer (${answer.text.length} B) is much smaller than the request (${requestBytes} B)`);
}

t.test('5,000 unknown command fields: a short 400, for any caller with claims', async (t) => {
  const { h, device } = await startThermostatBuilding(t);
  const body = { ...manyUnknownKeys(), ...command };
  const bytes = JSON.stringify(body).length;
  for (const caller of [manager, viewer]) {
    checkCapped(t, await callAs(h, caller, 'POST', '/executeAction', body), bytes, 'invalid command');
  }
  t.same(device.calls, [], 'nothing reached the device');
});

t.test("5,000 undeclared arguments of an editor's command: a short 400", async (t) => {
  const { h, device } = await startThermostatBuilding(t);
  const body = { ...command, arguments: { ...manyUnknownKeys(), target: 21.5 } };
  const answer = await callAs(h, manager, 'POST', '/executeAction', body);
  checkCapped(t, answer, JSON.stringify(body).length, 'invalid action arguments');
  t.match((answer.json as { errors: Problem[] }).errors[1], { field: 'extra-1', message: 'not a declared field of this metric' });
  t.same(device.calls, [], 'nothing reached the device');
});

t.test('a few problems are all listed, as before', async (t) => {
  const { h } = await startThermostatBuilding(t);
  const answer = await callAs(h, manager, 'POST', '/executeAction', { ...command, endpoint: 'http://127.0.0.1:1', sensorId: '' });
  t.equal(answer.status, 400);
  t.same((answer.json as { errors: Problem[] }).errors, [
    { field: 'endpoint', message: 'not a command field; a command names a registered sensor, and the device address is never taken from the request' },
    { field: 'sensorId', message: 'expected a non-empty string, got ""' },
  ]);
  const args = await callAs(h, manager, 'POST', '/executeAction', { ...command, arguments: { target: 'warm', url: 'http://127.0.0.1:1' } });
  t.same((args.json as { errors: Problem[] }).errors, [
    { field: 'target', message: 'expected a finite number, got "warm"' },
    { field: 'url', message: 'not a declared field of this metric' },
  ]);
});
