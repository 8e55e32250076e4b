/**
 * The metric catalog: one declaration per metric. Adding a metric touches this file only.
 */
import type { MetricDeclaration } from './declaration.js';
import { PLACE_AND_TIME } from './declaration.js';

export const temperature: MetricDeclaration = {
  value_field: 'temperature',
  key: 'temperature',
  label: 'Temperature',
  interface_name: 'ITemperature',
  unit: '°C',
  fields: [
    ...PLACE_AND_TIME,
    { name: 'temperature', kind: 'Finite', required: true },
    { name: 'humidity', kind: 'Finite', required: false },
    { name: 'targetTemperature', kind: 'Finite', required: false },
    { name: 'sensorId', kind: 'NonEmptyString', required: false },
  ],
  bounds: [
    { key: 'maxTemperature', field: 'temperature', label: 'Maximum temperature', unit: '°C', direction: 'Above' },
    { key: 'maxHumidity', field: 'humidity', label: 'Maximum relative humidity', unit: '%', direction: 'Above' },
  ],
  actions: [
    { name: 'setTarget', label: 'Set target temperature', parameters: [{ name: 'target', kind: 'Finite', required: true }] },
    { name: 'increase', label: 'Raise target temperature', parameters: [{ name: 'step', kind: 'Finite', required: false }] },
    { name: 'decrease', label: 'Lower target temperature', parameters: [{ name: 'step', kind: 'Finite', required: false }] },
  ],
  count: false,
  alertable: true,
};

export const peopleCount: MetricDeclaration = {
  value_field: 'peopleCount',
  key: 'peopleCount',
  label: 'People Count',
  interface_name: 'IPeopleCount',
  unit: 'people',
  fields: [
    ...PLACE_AND_TIME,
    { name: 'peopleCount', kind: 'NonNegativeInt', required: true },
    { name: 'sensorId', kind: 'NonEmptyString', required: false },
  ],
  bounds: [{ key: 'maxPeople', field: 'peopleCount', label: 'Maximum occupancy', unit: 'people', direction: 'Above' }],
  actions: [],
  count: true,
  alertable: true,
};

export const airQuality: MetricDeclaration = {
  value_field: 'co2',
  key: 'airQuality',
  label: 'Air Quality',
  interface_name: 'IAirQuality',
  unit: 'ppm',
  fields: [
    ...PLACE_AND_TIME,
    { name: 'co2', kind: 'Finite', required: true },
    { name: 'pm25', kind: 'Finite', required: false },
    { name: 'tvoc', kind: 'Finite', required: false },
    { name: 'sensorId', kind: 'NonEmptyString', required: false },
  ],
  bounds: [
    { key: 'maxCo2', field: 'co2', label: 'Maximum CO₂', unit: 'ppm', direction: 'Above' },
    { key: 'maxPm25', field: 'pm25', label: 'Maximum PM2.5', unit: 'µg/m³', direction: 'Above' },
    { key: 'maxTvoc', field: 'tvoc', label: 'Maximum TVOC', unit: 'ppb', direction: 'Above' },
  ],
  actions: [],
  count: false,
  alertable: true,
};

export const totalDeviceCount: MetricDeclaration = {
  value_field: 'totalDeviceCount',
  key: 'totalDeviceCount',
  label: 'Total Device Count',
  interface_name: 'ITotalDeviceCount',
  unit: 'devices',
  fields: [...PLACE_AND_TIME, { name: 'totalDeviceCount', kind: 'NonNegativeInt', required: true }],
  bounds: [],
  actions: [],
  count: true,
  alertable: false,
};

export const ratioDeviceCount: MetricDeclaration = {
  value_field: 'ratioDeviceCount',
  key: 'ratioDeviceCount',
  label: 'Estimated People (devices per person)',
  interface_name: 'IRatioDeviceCount',
  unit: 'people',
  fields: [...PLACE_AND_TIME, { name: 'ratioDeviceCount', kind: 'NonNegativeInt', required: true }],
  bounds: [],
  actions: [],
  count: true,
  alertable: false,
};

export const zoneTransition: MetricDeclaration = {
  value_field: 'zoneTransition',
  key: 'zoneTransition',
  label: 'Zone Transition',
  interface_name: 'IZoneTransition',
  unit: 'people',
  fields: [
    { name: 'buildingId', kind: 'NonEmptyString', required: true },
    { name: 'roomId', kind: 'NonEmptyString', required: true },
    { name: 'fromRoomId', kind: 'NonEmptyString', required: true },
    { name: 'timestamp', kind: 'Finite', required: true },
    { name: 'zoneTransition', kind: 'NonNegativeInt', required: true },
  ],
  bounds: [{ key: 'maxTransitions', field: 'zoneTransition', label: 'Zone transitions', direction: 'Above' }],
  actions: [],
  count: true,
  alertable: false,
};

export const apClients: MetricDeclaration = {
  value_field: 'apClients',
  key: 'apClients',
  label: 'Access Point Clients',
  interface_name: 'IApClients',
  unit: 'stations',
  fields: [...PLACE_AND_TIME, { name: 'apClients', kind: 'NonNegativeInt', required: true }],
  bounds: [],
  actions: [],
  count: true,
  alertable: false,
};

/** Every declared metric, by key. */
export const METRICS: Readonly<Record<string, MetricDeclaration>> = Object.freeze({
  temperature,
  peopleCount,
  airQuality,
  totalDeviceCount,
  ratioDeviceCount,
  zoneTransition,
  apClients,
});

/**
 * The declaration of a metric key, or undefined for an unregistered one.
 *
 * @example
 * metricOf('temperature')?.unit; // '°C'
 */
export function metricOf(key: string): MetricDeclaration | undefined {
  return Object.prototype.hasOwnProperty.call(METRICS, key) ? METRICS[key] : undefined;
}

/** The alertable metric keys: temperature, airQuality, peopleCount. */
export const ALERTABLE_METRICS: readonly string[] = Object.freeze(
  Object.values(METRICS)
    .filter((m) => m.alertable)
    .map((m) => m.key),
);

/** The count metric keys, whose retained buckets obey the privacy floor. */
export const COUNT_METRICS: readonly string[] = Object.freeze(
  Object.values(METRICS)
    .filter((m) => m.count)
    .map((m) => m.key),
);
