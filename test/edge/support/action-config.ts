/**
 * A gateway config for the `action` command's tests: one AP and one thermostat sensor in the lobby,
 * written to a fresh test directory.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

type TestDirs = { testdir(files: Record<string, string>): string };

/** Writes the config and answers its path. */
export function actionConfig(t: TestDirs, sensor: { sensorId: string; driver: string; endpoint: string }): string {
  const dir = t.testdir({ community: 'public' });
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    `buildingId: hq
pollIntervalS: 10
requestTimeoutS: 5
stateDir: state
zones: { lobby: {} }
accessPoints:
  - { name: ap1, zone: lobby, dialect: aruba-aos, transport: snmp, host: 127.0.0.1, snmp: { version: 2c, communityFile: community } }
sensors:
  - { sensorId: ${sensor.sensorId}, zone: lobby, metric: temperature, driver: ${sensor.driver}, endpoint: "${sensor.endpoint}" }
`,
  );
  return config;
}
