/**
 * A `building-registrations` message (CONTRACTS.md):
 * `{buildingId, rooms: [roomId], thresholds: {<metric>: {<boundKey>: number}}, sensors: [{sensorId, roomId, metric, driver, endpoint}]}`.
 */
import * as t from 'io-ts';
import { metricOf } from '../../../shared/catalog/metrics.js';
import { percentDecodable } from '../../../shared/env.js';
import { CONTROL_CHARACTERS, Finite, NonEmptyString, decode, storableText } from '../../../shared/kinds.js';
import type { RegisteredSensor } from '../../../shared/devices/adapter.js';

const SensorCodec = t.type({
  sensorId: NonEmptyString,
  roomId: NonEmptyString,
  metric: NonEmptyString,
  driver: NonEmptyString,
  endpoint: t.string,
});

const RegistrationCodec = t.intersection([
  t.type({ buildingId: NonEmptyString }),
  t.partial({
    rooms: t.array(NonEmptyString),
    thresholds: t.record(t.string, t.record(t.string, Finite)),
    sensors: t.array(SensorCodec),
  }),
]);

/** A checked registration. `rooms` also holds every room a sensor names. */
export interface Registration {
  buildingId: string;
  rooms: string[];
  thresholds: Array<{ metric: string; bounds: Record<string, number> }>;
  sensors: RegisteredSensor[];
}

/** Why an endpoint cannot be registered, or undefined when it is an absolute http(s) URL. */
function endpointProblem(endpoint: string): string | undefined {
  // Checked before parsing: the URL parser drops tabs and line breaks and escapes NUL, so such an
  // endpoint would parse, then be stored other than it was checked, or not at all (PostgreSQL refuses
  // NUL, and the consumer would fail on that message again at every restart, blocking every later one).
  if (CONTROL_CHARACTERS.test(endpoint) || !storableText(endpoint)) return 'an endpoint holds no control character (NUL, tab, line break, …) or lone surrogate';
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return 'expected an absolute http:// or https:// URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `expected an http:// or https:// URL, got a ${url.protocol} URL`;
  if (url.search || url.hash) return 'an endpoint holds no query or fragment';
  // The device adapter decodes them to send Basic authorization; refused here, such an endpoint would
  // be stored and then fail every command with a vague 500.
  if (!percentDecodable(url.username) || !percentDecodable(url.password)) {
    return 'the user and password of an endpoint are percent-encoded (write a literal "%" as %25); these are not (not shown: a password is a secret)';
  }
  return undefined;
}

/**
 * Decodes and checks a message: every problem is listed, with its path. Unknown metrics, bound keys
 * that metric does not declare, and endpoints that are not http(s), hold a query or fragment, or whose
 * user or password is not valid percent-encoding are refused.
 *
 * @example
 * parseRegistration({ buildingId: 'b1', rooms: ['r1'], thresholds: { temperature: { maxTemperature: 26 } }, sensors: [] });
 * // { ok: true, value: { buildingId: 'b1', rooms: ['r1'], thresholds: [{ metric: 'temperature', bounds: { maxTemperature: 26 } }], sensors: [] } }
 */
export function parseRegistration(input: unknown): { ok: true; value: Registration } | { ok: false; errors: string[] } {
  const decoded = decode(RegistrationCodec, input);
  if (!decoded.ok) return decoded;
  const message = decoded.value;
  const errors: string[] = [];
  const thresholds: Registration['thresholds'] = [];
  for (const [key, bounds] of Object.entries(message.thresholds ?? {})) {
    const metric = metricOf(key);
    if (!metric) {
      errors.push(`thresholds.${key}: unknown metric`);
      continue;
    }
    const declared = new Set(metric.bounds.map((b) => b.key));
    for (const bound of Object.keys(bounds)) if (!declared.has(bound)) errors.push(`thresholds.${key}.${bound}: not a bound of ${key}`);
    if (Object.keys(bounds).length > 0) thresholds.push({ metric: key, bounds: { ...bounds } });
  }
  const sensors: RegisteredSensor[] = [];
  (message.sensors ?? []).forEach((sensor, i) => {
    if (!metricOf(sensor.metric)) errors.push(`sensors[${i}].metric: unknown metric ${JSON.stringify(sensor.metric)}`);
    const problem = endpointProblem(sensor.endpoint);
    if (problem) errors.push(`sensors[${i}].endpoint: ${problem}`);
    sensors.push({ buildingId: message.buildingId, sensorId: sensor.sensorId, roomId: sensor.roomId, metric: sensor.metric, driver: sensor.driver, endpoint: sensor.endpoint });
  });
  const ids = sensors.map((s) => s.sensorId);
  const repeated = ids.filter((id, i) => ids.indexOf(id) !== i);
  if (repeated.length > 0) errors.push(`sensors: sensorId ${JSON.stringify(repeated[0])} appears more than once`);
  if (errors.length > 0) return { ok: false, errors };
  const rooms = [...new Set([...(message.rooms ?? []), ...sensors.map((s) => s.roomId)])];
  return { ok: true, value: { buildingId: message.buildingId, rooms, thresholds, sensors } };
}
