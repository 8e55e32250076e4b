/** Local device actions: the configured sensors, driven through the shared device adapter. */
export { configuredSensors, createLocalDevices, unknownDrivers } from './local-devices.js';
export type { LocalDevices, LocalSensor } from './local-devices.js';
