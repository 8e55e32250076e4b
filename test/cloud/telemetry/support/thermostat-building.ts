/**
 * A telemetry harness with one building `b1` of domain `acme`, room `r1`, and one registered thermostat
 * `stat-ok` (driver `ecobee-local-thermostat`) served by a fake device on loopback: what the
 * /executeAction tests command.
 */
import type { Test } from 'tap';
import { parseRegistration } from '../../../../cloud/telemetry/domain/registration.js';
import { startFakeDevice, type FakeDevice } from '../../../support/fake-device.js';
import { startHarness, type Harness } from './harness.js';

export async function startThermostatBuilding(t: Test): Promise<{ h: Harness; device: FakeDevice }> {
  const h = await startHarness(t);
  h.directory.set('b1', ['acme']);
  const device = await startFakeDevice(t);
  const parsed = parseRegistration({ buildingId: 'b1', rooms: ['r1'], sensors: [{ sensorId: 'stat-ok', roomId: 'r1', metric: 'temperature', driver: 'ecobee-local-thermostat', endpoint: device.url }] });
  if (!parsed.ok) throw new Error(parsed.errors.join('; '));
  await h.buildings.applyRegistration(parsed.value);
  return { h, device };
}
