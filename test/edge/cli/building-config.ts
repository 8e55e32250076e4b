/**
 * Test helpers for the command line: a config file for a simulated building (what an installer would
 * write for it), and running lintel-edge as a child process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { CREDENTIAL_FILES } from '../../../edge/src/simulate/index.js';
import type { SimulatedBuilding } from '../../../edge/src/simulate/types.js';
import { looksLikeIdentifier } from '../../../edge/src/report/identifiers.js';

export const REPO = new URL('../../../', import.meta.url).pathname;
export const CLI = join(REPO, 'edge/src/cli.ts');

export interface ConfigExtras {
  ingest?: { url: string; secretFile: string; keyId?: string };
  metricsPort?: number;
  pollIntervalS?: number;
  requestTimeoutS?: number;
  /** Replace parts of an AP entry (by name), e.g. to point it at a closed port. */
  override?: Record<string, (ap: Record<string, unknown>) => Record<string, unknown>>;
  /** APs of the building (by name) left out of the config. */
  exclude?: readonly string[];
  /** Default `<dir>/state`. */
  stateDir?: string;
}

/** Writes `<dir>/config.yaml` for the building; secrets stay in the building's own files. */
export function writeBuildingConfig(building: SimulatedBuilding, workDir: string, dir: string, extras: ConfigExtras = {}): string {
  const file = (name: string) => join(workDir, name);
  const accessPoints = building.accessPoints.filter((ap) => !extras.exclude?.includes(ap.name)).map((ap) => {
    const t = ap.target;
    const entry: Record<string, unknown> = { name: ap.name, dialect: ap.dialect, transport: t.transport, host: t.host };
    if (ap.apZones) {
      entry.apZones = Object.fromEntries(
        Object.entries(ap.apZones).map(([identity, zone], i) => [identity, looksLikeIdentifier(identity) ? { zone, name: `${ap.name}-ap${i + 1}` } : zone]),
      );
    } else {
      entry.zone = ap.zone;
    }
    if (t.transport === 'snmp') {
      entry.snmp =
        t.version === '3'
          ? { version: 3, port: t.port, user: t.user, authProtocol: t.authProtocol, authKeyFile: file(CREDENTIAL_FILES.snmpV3AuthKey), privProtocol: t.privProtocol, privKeyFile: file(CREDENTIAL_FILES.snmpV3PrivKey) }
          : { version: '2c', port: t.port, communityFile: file(CREDENTIAL_FILES.snmpCommunity) };
    } else {
      entry.ssh = {
        port: t.port,
        username: t.username,
        privateKeyFile: file(CREDENTIAL_FILES.sshClientKey),
        ...(t.hostKeySha256 ? { hostKeySha256: t.hostKeySha256 } : {}),
        ...(t.interface ? { interface: t.interface } : {}),
      };
    }
    return extras.override?.[ap.name] ? extras.override[ap.name]!(entry) : entry;
  });
  const config = {
    buildingId: 'test-building',
    pollIntervalS: extras.pollIntervalS ?? 2,
    // wide enough that a loaded machine's real snmpd and sshd answer inside it
    requestTimeoutS: extras.requestTimeoutS ?? 2,
    stateDir: extras.stateDir ?? join(dir, 'state'),
    zones: Object.fromEntries(building.zones.map((z, i) => [z, i === 0 ? { devicesPerPerson: 1.5 } : {}])),
    tracker: { switchPolls: 2, frozenPolls: 10 },
    ...(extras.ingest ? { ingest: { ...extras.ingest, timeoutS: Math.min(2, extras.pollIntervalS ?? 2) } } : {}),
    ...(extras.metricsPort ? { metrics: { listen: `127.0.0.1:${extras.metricsPort}` } } : {}),
    logLevel: 'debug',
    accessPoints,
  };
  const path = join(dir, 'config.yaml');
  writeFileSync(path, stringify(config), { mode: 0o600 });
  return path;
}

/** A TCP port nothing listens on right now. */
/**
 * Writes `<dir>/config.yaml` for one SNMP AP on `apPort` (nothing need listen there) posting to `ingest`
 * with the key in `<dir>/ingest.key`, and `<dir>/community`: a gateway whose first tick posts one batch.
 */
export function writeSingleApConfig(dir: string, options: { buildingId: string; apPort: number; ingestUrl: string; ingestTimeoutS: number; metricsPort?: number }): string {
  const config = join(dir, 'config.yaml');
  const metrics = options.metricsPort === undefined ? '' : `metrics: { listen: "127.0.0.1:${options.metricsPort}" }\n`;
  writeFileSync(
    config,
    `buildingId: ${options.buildingId}
pollIntervalS: 30
requestTimeoutS: 1
stateDir: ${join(dir, 'state')}
zones: { lobby: {} }
accessPoints:
  - { name: ap1, zone: lobby, dialect: aruba-aos, transport: snmp, host: 127.0.0.1, snmp: { version: 2c, port: ${options.apPort}, communityFile: ${join(dir, 'community')} } }
ingest: { url: "${options.ingestUrl}", secretFile: ${join(dir, 'ingest.key')}, timeoutS: ${options.ingestTimeoutS} }
${metrics}`,
    { mode: 0o600 },
  );
  return config;
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface Child {
  process: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

/** Runs `lintel-edge <args>` through tsx, from the repository; `via` is a command that runs node (env(1), say). */
export function startCli(args: string[], env: Record<string, string> = {}, via: string[] = []): Child {
  const argv = [process.execPath, '--import', 'tsx', CLI, ...args];
  const [command, ...rest] = [...via, ...argv] as [string, ...string[]];
  const child = spawn(command, rest, { cwd: REPO, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { process: child, stdout: () => out, stderr: () => err, exited };
}

/** Runs `lintel-edge <args>` to completion. */
export async function runCli(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = startCli(args, env);
  const code = await child.exited;
  return { code, stdout: child.stdout(), stderr: child.stderr() };
}

/** Waits for a condition, polling, up to `ms`. */
export async function until(condition: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

/**
 * A collector of one SNMP AP on a port nothing answers (its devices are simply none), no ingest, its
 * state in `stateDir`: what the start-failure tests run. `mode` is that of the config and community
 * files (0644 for a service user other than root to read them).
 */
export async function writeSilentCollectorConfig(dir: string, stateDir: string, mode = 0o600): Promise<string> {
  const community = join(dir, 'community');
  writeFileSync(community, 'public\n', { mode });
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    `buildingId: test-building
pollIntervalS: 1
requestTimeoutS: 1
stateDir: ${stateDir}
zones: { lobby: {} }
accessPoints:
  - { name: ap1, zone: lobby, dialect: aruba-aos, transport: snmp, host: 127.0.0.1, snmp: { version: 2c, port: ${await freePort()}, communityFile: ${community} } }
`,
    { mode },
  );
  return config;
}

/** The JSON log lines a child has written to stdout so far. */
export function logsOf(child: Child): Array<Record<string, unknown>> {
  return child
    .stdout()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
