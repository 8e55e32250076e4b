/**
 * The simulated building: real SNMP agents and SSH servers on loopback, serving stations of devices
 * that walk between zones with jittery RSSI, while APs reboot now and then.
 */
import type { AccessPoint } from '../poll/types.js';

export interface SimulationOptions {
  /** Number of access points, spread over zones (several APs per zone overlap in coverage). Default 6. */
  accessPoints?: number;
  /** Zone ids (roomIds). Default zone-a … zone-c. */
  zones?: string[];
  /** Number of devices walking around. Default 40. */
  devices?: number;
  /** Deterministic randomness. */
  seed?: number;
  /** Fraction of steps in which some AP reboots (goes silent for a few steps). Default 0.02. */
  rebootRate?: number;
  /** Which dialects to serve; default a mix of SNMP and SSH dialects. */
  dialects?: string[];
  /** Directory for generated keys and credentials (created if missing). */
  workDir: string;
}

export interface GroundTruth {
  /** Devices truly present per zone (every zone listed, 0 included). */
  zoneCounts: Record<string, number>;
}

export interface SimulatedBuilding {
  /** The APs as the collector config should list them: targets point at the loopback agents. */
  readonly accessPoints: AccessPoint[];
  readonly zones: string[];
  /** Advance the world one step: devices move, RSSI jitters, APs may reboot. */
  step(): void;
  /** The true per-zone presence after the last step. */
  groundTruth(): GroundTruth;
  stop(): Promise<void>;
}
