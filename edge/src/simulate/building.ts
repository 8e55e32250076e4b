/**
 * A simulated building served over real protocols on loopback: one net-snmp agent per SNMP AP (one per
 * controller for controller dialects, answering for every AP joined to it) and one ssh2 server per SSH AP.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import ssh2, { type ParsedKey } from 'ssh2';
import { loadDialects, type Dialect, type SnmpDialect, type SshDialect } from '../poll/dialects.js';
import type { AccessPoint, SnmpTarget, SshTarget } from '../poll/types.js';
import { fingerprintOf } from '../poll/ssh/session.js';
import { freeTcpPorts, freeUdpPorts } from './ports.js';
import type { HeardStation } from './render.js';
import { SimulatedSnmpEndpoint } from './snmp-endpoint.js';
import { SimulatedSshEndpoint } from './ssh-endpoint.js';
import type { GroundTruth, SimulatedBuilding, SimulationOptions } from './types.js';
import { createWorld, type WorldAp } from './world.js';

/** The dialects a building mixes when none are named: every shipped family, SNMP and SSH alternating. */
export const DEFAULT_SIMULATED_DIALECTS = ['openwrt-iw', 'aruba-aos', 'unifi', 'mikrotik', 'openwrt-ubus', 'cisco-wlc', 'ruckus-zd'];

/** Credentials and keys the building generates, also written to `workDir` as files (mode 0600). */
export const CREDENTIAL_FILES = {
  sshClientKey: 'ssh-client-ed25519',
  snmpCommunity: 'snmp-community',
  snmpV3AuthKey: 'snmp-v3-auth-key',
  snmpV3PrivKey: 'snmp-v3-priv-key',
} as const;

interface Endpoint {
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** One endpoint and the physical APs it answers for. */
interface Served {
  endpoint: Endpoint;
  /** The physical APs behind it (one, or several behind a controller). */
  aps: WorldAp[];
  /** A controller stays up while the APs behind it reboot; an AP's own endpoint goes down with it. */
  controller: boolean;
  /** Whether it was last asked to be up. */
  up: boolean | undefined;
  /** start()/stop() in order. */
  chain: Promise<void>;
  refresh?: () => void;
}

/**
 * An ed25519 key pair that ssh2 can read back: its generator now and then emits a key its own parser
 * rejects (about 1 in 300), so such a pair is drawn again.
 */
function generateSshKeyPair(): { private: string; public: string; parsed: ParsedKey } {
  for (let attempt = 0; attempt < 20; attempt++) {
    const pair = ssh2.utils.generateKeyPairSync('ed25519');
    const parsed = ssh2.utils.parseKey(pair.private);
    const parsedPublic = ssh2.utils.parseKey(pair.public);
    if (!(parsed instanceof Error) && !(parsedPublic instanceof Error)) return { ...pair, parsed };
  }
  throw new Error('could not generate a usable ed25519 key pair');
}

function secret(): string {
  return randomBytes(12).toString('base64url');
}

function writeSecret(dir: string, name: string, value: string): void {
  const path = join(dir, name);
  writeFileSync(path, `${value}\n`, { mode: 0o600 });
  chmodSync(path, 0o600);
}

/**
 * Starts a simulated building and returns once every endpoint listens.
 *
 * `accessPoints` lists what a collector config would: one entry per standalone AP, one per controller
 * (with `apZones` mapping the AP names or MACs behind it to zones). The SNMP endpoints use a generated
 * community, except the first, which uses SNMPv3 authPriv (SHA/AES) with generated keys; SSH endpoints
 * accept the generated client key and present a generated host key, pinned in each target. The same
 * secrets are written to `workDir` (see {@link CREDENTIAL_FILES}).
 *
 * @example
 * const building = await startSimulatedBuilding({ workDir: '/tmp/lintel-sim', seed: 7 });
 * const poller = createPoller({ dialects: loadDialects() });
 * setInterval(async () => {
 *   building.step();
 *   const results = await poller.pollAll(building.accessPoints, 800);
 *   console.log(building.groundTruth().zoneCounts, results.filter((r) => r.ok).length);
 * }, 1000);
 * // later: await poller.close(); await building.stop();
 */
export async function startSimulatedBuilding(options: SimulationOptions): Promise<SimulatedBuilding> {
  const zones = options.zones ?? ['zone-a', 'zone-b', 'zone-c'];
  const accessPointCount = options.accessPoints ?? 6;
  const dialectNames = options.dialects ?? DEFAULT_SIMULATED_DIALECTS;
  if (dialectNames.length === 0) throw new RangeError('dialects: name at least one dialect');
  const catalog = loadDialects();
  const unknown = dialectNames.filter((name) => !catalog.has(name));
  if (unknown.length > 0) throw new RangeError(`unknown dialect(s): ${unknown.join(', ')} (known: ${[...catalog.keys()].join(', ')})`);

  const world = createWorld({
    zones,
    accessPoints: accessPointCount,
    devices: options.devices ?? 40,
    seed: options.seed ?? 1,
    rebootRate: options.rebootRate ?? 0.02,
    ...(options.motion ? { motion: options.motion } : {}),
  });

  mkdirSync(options.workDir, { recursive: true, mode: 0o700 });
  const community = secret();
  const v3 = { user: 'lintel-sim', authKey: secret(), privKey: secret() };
  const hostKey = generateSshKeyPair();
  const clientKey = generateSshKeyPair();
  const hostKeySha256 = fingerprintOf(hostKey.parsed.getPublicSSH());
  writeSecret(options.workDir, CREDENTIAL_FILES.sshClientKey, clientKey.private.trim());
  writeSecret(options.workDir, CREDENTIAL_FILES.snmpCommunity, community);
  writeSecret(options.workDir, CREDENTIAL_FILES.snmpV3AuthKey, v3.authKey);
  writeSecret(options.workDir, CREDENTIAL_FILES.snmpV3PrivKey, v3.privKey);

  // which physical AP speaks which dialect; controller dialects gather their APs behind one endpoint
  const groups = new Map<string, { dialect: Dialect; aps: WorldAp[] }>();
  world.accessPoints.forEach((ap, i) => {
    const dialect = catalog.get(dialectNames[i % dialectNames.length] as string) as Dialect;
    const key = dialect.transport === 'snmp' && dialect.controller ? `controller:${dialect.name}` : `ap:${ap.name}`;
    const group = groups.get(key) ?? { dialect, aps: [] };
    group.aps.push(ap);
    groups.set(key, group);
  });
  const groupList = [...groups.values()];
  const udpPorts = await freeUdpPorts(groupList.filter((g) => g.dialect.transport === 'snmp').length);
  const tcpPorts = await freeTcpPorts(groupList.filter((g) => g.dialect.transport === 'ssh').length);

  const heardBy = (aps: readonly WorldAp[]): HeardStation[] =>
    aps.flatMap((ap) => world.sightings(ap.name).map((s) => ({ ...s, apName: ap.name, apMac: ap.mac })));

  const accessPoints: AccessPoint[] = [];
  const served: Served[] = [];
  /** The name the poller reports for each physical AP: its MAC behind a controller that keys APs by MAC. */
  const reportedNames = new Map<string, string>(world.accessPoints.map((ap) => [ap.name, ap.name]));
  let snmpCount = 0;
  for (const { dialect, aps } of groupList) {
    const first = aps[0] as WorldAp;
    if (dialect.transport === 'snmp') {
      const port = udpPorts.shift() as number;
      const target: SnmpTarget =
        snmpCount++ === 0
          ? { transport: 'snmp', host: '127.0.0.1', port, version: '3', user: v3.user, authProtocol: 'sha', authKey: v3.authKey, privProtocol: 'aes', privKey: v3.privKey }
          : { transport: 'snmp', host: '127.0.0.1', port, version: '2c', community };
      const engineID = `8000B98380${randomBytes(12).toString('hex')}`;
      const endpoint = new SimulatedSnmpEndpoint(target, dialect as SnmpDialect, engineID);
      const refresh = () => endpoint.update(heardBy(aps), aps.map((ap) => ({ name: ap.name, mac: ap.mac, rebooting: world.rebooting(ap.name) })));
      refresh();
      served.push({ endpoint, aps, controller: dialect.controller, up: undefined, chain: Promise.resolve(), refresh });
      const entry: AccessPoint = { name: dialect.controller ? `${dialect.name}-controller` : first.name, zone: first.zone, dialect: dialect.name, target };
      if (dialect.controller) {
        const identity = dialect.tables[0]?.apIdentity;
        const byMac = identity !== undefined && ('index' in identity || identity.format === 'mac');
        entry.apZones = Object.fromEntries(aps.map((ap) => [byMac ? ap.mac : ap.name, ap.zone]));
        if (byMac) for (const ap of aps) reportedNames.set(ap.name, ap.mac);
      }
      accessPoints.push(entry);
    } else {
      const port = tcpPorts.shift() as number;
      const sshDialect = dialect as SshDialect;
      const target: SshTarget = {
        transport: 'ssh',
        host: '127.0.0.1',
        port,
        username: 'lintel',
        privateKey: clientKey.private,
        hostKeySha256,
        ...(sshDialect.command.includes('{if}') ? { interface: sshDialect.defaultInterface ?? 'wlan0' } : {}),
      };
      const endpoint = new SimulatedSshEndpoint(target, sshDialect, hostKey.private, clientKey.public, first, () => world.sightings(first.name));
      served.push({ endpoint, aps, controller: false, up: undefined, chain: Promise.resolve() });
      accessPoints.push({ name: first.name, zone: first.zone, dialect: dialect.name, target });
    }
  }

  let stopped = false;
  const failures: Error[] = [];
  /** Opens or closes each endpoint to match the world; a failed (re)start is retried at the next step. */
  function reconcile(): void {
    for (const item of served) {
      const shouldBeUp = !stopped && (item.controller || !item.aps.every((ap) => world.rebooting(ap.name)));
      if (item.up === shouldBeUp) continue;
      item.up = shouldBeUp;
      item.chain = item.chain
        .then(() => (shouldBeUp ? item.endpoint.start() : item.endpoint.stop()))
        .catch((error: Error) => {
          failures.push(error);
          item.up = undefined;
        });
    }
  }

  reconcile();
  await Promise.all(served.map((item) => item.chain));
  if (failures.length > 0) {
    stopped = true;
    reconcile();
    await Promise.all(served.map((item) => item.chain));
    throw new Error(`the simulated building could not start: ${failures.map((e) => e.message).join('; ')}`);
  }

  const building: SimulatedBuilding = {
    accessPoints,
    zones: [...world.zones],
    step() {
      if (stopped) return;
      world.step();
      for (const item of served) item.refresh?.();
      reconcile();
    },
    groundTruth(): GroundTruth {
      return { zoneCounts: world.zoneCounts() };
    },
    async ready() {
      await Promise.all(served.map((item) => item.chain));
    },
    reboot(apName, steps = 5) {
      const worldName = [...reportedNames].find(([, reported]) => reported === apName)?.[0] ?? apName;
      world.reboot(worldName, steps);
      for (const item of served) item.refresh?.();
      reconcile();
    },
    rebooting() {
      return world.accessPoints.filter((ap) => world.rebooting(ap.name)).map((ap) => reportedNames.get(ap.name) ?? ap.name);
    },
    deviceZones() {
      return world.deviceZones();
    },
    async stop() {
      stopped = true;
      reconcile();
      await Promise.all(served.map((item) => item.chain));
    },
  };
  return building;
}
