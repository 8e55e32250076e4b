/**
 * A real Net-SNMP `snmpd` on loopback for tests and benchmarks: its own config in a temp dir, v2c
 * community and v3 users, and recorded AP tables served through a pass_persist script.
 *
 * @example
 * const snmpd = await startSnmpd({ recordings: [recording('cisco-wlc.snmpwalk')], v3Users: [user] });
 * // … poll 127.0.0.1:snmpd.port …
 * await snmpd.stop();
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freeUdpPorts } from './ports.js';
import { startPeer, type PeerProcess } from './process.js';

export const SNMPD = '/usr/sbin/snmpd';
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
const PASS_PERSIST = fileURLToPath(new URL('./pass-persist-recorded.py', import.meta.url));

/** Recorded AP tables and command outputs shipped with the tests. */
export const RECORDINGS_DIR = fileURLToPath(new URL('./recordings/', import.meta.url));

/** The path of one recording, e.g. `recording('cisco-wlc.snmpwalk')`. */
export function recording(name: string): string {
  return join(RECORDINGS_DIR, name);
}

export interface SnmpdUser {
  name: string;
  authProtocol: 'SHA' | 'MD5';
  authKey: string;
  privProtocol?: 'AES' | 'DES';
  privKey?: string;
}

export interface SnmpdOptions {
  /** `snmpwalk -On` captures to serve under .1.3.6.1.4.1 (enterprises). */
  recordings?: string[];
  /** Read-only v2c community. Default `public`. */
  community?: string;
  /** SNMPv3 USM users (read-only); with privKey they need authPriv, else authNoPriv. */
  v3Users?: SnmpdUser[];
  /** Listen on this many UDP ports (all serving the same data). Default 1. */
  ports?: number;
  /** Extra snmpd.conf lines. */
  extraConfig?: string[];
}

export interface RunningSnmpd {
  host: '127.0.0.1';
  /** The first port. */
  port: number;
  ports: number[];
  dir: string;
  /** snmpd's log (for failure messages). */
  log(): string;
  pid: number;
  stop(): Promise<void>;
}

function configOf(options: SnmpdOptions): string {
  const lines = [
    `rocommunity ${options.community ?? 'public'} 127.0.0.1`,
    // one line per request otherwise
    'dontLogTCPWrappersConnects yes',
  ];
  for (const user of options.v3Users ?? []) {
    const priv = user.privKey ? ` ${user.privProtocol ?? 'AES'} "${user.privKey}"` : '';
    lines.push(`createUser ${user.name} ${user.authProtocol} "${user.authKey}"${priv}`);
    lines.push(`rouser ${user.name} ${user.privKey ? 'priv' : 'auth'}`);
  }
  if (options.recordings && options.recordings.length > 0) {
    for (const file of options.recordings) {
      if (/\s/.test(file)) throw new Error(`recording path must not contain spaces: ${file}`);
    }
    lines.push(`pass_persist .1.3.6.1.4.1 ${PYTHON} ${PASS_PERSIST} ${options.recordings.join(' ')}`);
  }
  lines.push(...(options.extraConfig ?? []));
  return `${lines.join('\n')}\n`;
}

async function attempt(options: SnmpdOptions): Promise<RunningSnmpd> {
  const dir = mkdtempSync(join(tmpdir(), 'lintel-snmpd-'));
  const conf = join(dir, 'snmpd.conf');
  const logFile = join(dir, 'snmpd.log');
  writeFileSync(conf, configOf(options), { mode: 0o600 });
  const ports = await freeUdpPorts(options.ports ?? 1);
  const readLog = () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '');
  let peer: PeerProcess;
  try {
    peer = await startPeer(
      SNMPD,
      ['-f', '-Lf', logFile, '-C', '-c', conf, '-p', join(dir, 'snmpd.pid'), ports.map((p) => `udp:127.0.0.1:${p}`).join(',')],
      {
        name: 'snmpd',
        // persistent state (engine boots, USM keys) stays in the temp dir; no MIB loading noise
        env: { ...process.env, SNMP_PERSISTENT_DIR: join(dir, 'persist'), MIBS: '', MIBDIRS: join(dir, 'mibs') },
        isReady: () => readLog().includes('NET-SNMP version'),
      },
    );
  } catch (error) {
    const log = readLog();
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`${(error as Error).message}\n${log}`);
  }
  return {
    host: '127.0.0.1',
    port: ports[0] as number,
    ports,
    dir,
    log: readLog,
    pid: peer.child.pid ?? -1,
    async stop() {
      await peer.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Starts snmpd; retried on a port taken between choosing and binding it. */
export async function startSnmpd(options: SnmpdOptions = {}): Promise<RunningSnmpd> {
  let lastError: unknown;
  for (let i = 0; i < 3; i++) {
    try {
      return await attempt(options);
    } catch (error) {
      lastError = error;
      if (!/bind|in use|Error opening specified endpoint/i.test(String((error as Error).message))) break;
    }
  }
  throw lastError;
}
