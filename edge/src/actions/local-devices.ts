/**
 * Driving building devices locally: the sensors a gateway's config lists, commanded through the shared
 * device adapter (the same validation, bindings and safety rules as the cloud's POST /executeAction).
 * The device URL comes only from the configured endpoint and the shipped binding path.
 */
import { metricOf } from '../../../shared/catalog/metrics.js';
import type { ActionSpec } from '../../../shared/catalog/declaration.js';
import { createDeviceAdapter, DeviceCommandError, type RegisteredSensor, type SensorLookup } from '../../../shared/devices/adapter.js';
import { capabilitiesOf, type BindingCatalog } from '../../../shared/devices/bindings.js';

/** A lookup over the configured sensors of one building. */
export function configuredSensors(sensors: readonly RegisteredSensor[]): SensorLookup {
  return {
    async sensorOf(buildingId, roomId, sensorId) {
      return sensors.find((s) => s.buildingId === buildingId && s.roomId === roomId && s.sensorId === sensorId);
    },
  };
}

/** Configured sensors whose driver the binding catalog does not know, one line each. */
export function unknownDrivers(sensors: readonly RegisteredSensor[], catalog: BindingCatalog): string[] {
  return sensors
    .map((s, i) => (catalog.driver(s.driver) ? undefined : `sensors[${i}].driver: expected one of ${catalog.drivers().join(', ')}, got ${JSON.stringify(s.driver)}`))
    .filter((line): line is string => line !== undefined);
}

export interface LocalSensor {
  sensor: RegisteredSensor;
  /** The actions its metric declares that its driver binds. */
  actions: ActionSpec[];
}

export interface LocalDevices {
  list(): LocalSensor[];
  /** Runs one action on one configured sensor; rejects with DeviceCommandError (its `code` says why). */
  execute(sensorId: string, action: string, args: Readonly<Record<string, unknown>>): Promise<{ accepted: true; sensor: RegisteredSensor }>;
}

/**
 * The gateway's devices.
 *
 * @example
 * const devices = createLocalDevices(config.sensors, await loadBindingCatalog());
 * await devices.execute('stat-lobby', 'setTarget', { target: 21 }); // { accepted: true, sensor }
 */
export function createLocalDevices(sensors: readonly RegisteredSensor[], catalog: BindingCatalog, timeoutMs = 5000): LocalDevices {
  const adapter = createDeviceAdapter({ catalog, sensors: configuredSensors(sensors), timeoutMs });
  return {
    list: () =>
      sensors.map((sensor) => {
        const metric = metricOf(sensor.metric);
        return { sensor, actions: metric ? capabilitiesOf(metric, catalog.driver(sensor.driver)) : [] };
      }),
    async execute(sensorId, action, args) {
      const sensor = sensors.find((s) => s.sensorId === sensorId);
      if (!sensor) {
        throw new DeviceCommandError('no_sensor', `no sensor ${JSON.stringify(sensorId)} in this gateway's config (have: ${sensors.map((s) => s.sensorId).join(', ') || 'none'})`);
      }
      await adapter.execute({ metric: sensor.metric, buildingId: sensor.buildingId, roomId: sensor.roomId, sensorId, action, arguments: args });
      return { accepted: true, sensor };
    },
  };
}
