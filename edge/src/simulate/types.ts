/**
 * The simulated building: real SNMP agents and SSH servers on loopback, serving stations of devices
 * that walk between zones with jittery RSSI, while APs reboot now and then.
 */
import type { AccessPoint } from '../poll/types.js';
import type { MotionModel } from './world.js';

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
  /** How devices move; default the world's realistic motion (REALISTIC_MOTION). */
  motion?: MotionModel;
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
  /**
   * Advance the world one step: devices move, RSSI jitters, APs may reboot. A rebooting AP's socket is
   * closed (and re-opened on the same port when it is back) in the background; `ready()` waits for that.
   */
  step(): void;
  /** The true per-zone presence after the last step. */
  groundTruth(): GroundTruth;
  /**
   * Resolves once every AP endpoint matches the world: listening, or closed while its AP reboots.
   * (Added; optional for callers that just step once a second.)
   */
  ready(): Promise<void>;
  /** Makes one physical AP (by the name the poller reports) go silent for `steps` steps (default 5). (Added.) */
  reboot(apName: string, steps?: number): void;
  /** Physical APs rebooting now, by the names the poller reports. (Added.) */
  rebooting(): string[];
  /** The true zone of each device MAC, for accuracy checks in tests; never for output. (Added.) */
  deviceZones(): ReadonlyMap<string, string>;
  /** Closes every agent and server. */
  stop(): Promise<void>;
}
