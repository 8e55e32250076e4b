/**
 * The simulated building: the public surface for the CLI `simulate` command, the demo and the tests.
 */
export type { GroundTruth, SimulatedBuilding, SimulationOptions } from './types.js';
export { startSimulatedBuilding, DEFAULT_SIMULATED_DIALECTS, CREDENTIAL_FILES } from './building.js';
export {
  createWorld,
  DEFAULT_RADIO,
  LIVELY_MOTION,
  REALISTIC_MOTION,
  ZONE_DEPTH_M,
  ZONE_WIDTH_M,
  type MotionModel,
  type RadioModel,
  type World,
  type WorldAp,
  type WorldOptions,
} from './world.js';
export { createRandom, type Random } from './prng.js';
export { apStatusRows, fromDbm, rebootingApStatus, snmpRows, sshOutput, type HeardStation, type JoinedAp, type SnmpRow } from './render.js';
export { freeTcpPorts, freeUdpPorts } from './ports.js';
