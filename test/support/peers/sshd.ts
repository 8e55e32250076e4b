/**
 * A real OpenSSH `sshd` on loopback for tests: generated host and client keys (never committed), key
 * auth only, and a ForceCommand that answers each command with a recorded AP output.
 *
 * @example
 * const sshd = await startSshd({ commands: { 'mca-dump': { stdoutFile: recording('unifi-mca-dump.json') } } });
 * // target: { host: sshd.host, port: sshd.port, username: sshd.username, privateKey: sshd.clientPrivateKey }
 * await sshd.stop();
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freeTcpPort } from './ports.js';
import { startPeer, type PeerProcess } from './process.js';

export const SSHD = '/usr/sbin/sshd';
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
const FORCE_COMMAND = fileURLToPath(new URL('./recorded-ap-shell.py', import.meta.url));

/** What the AP "prints" for one exact command line. */
export interface SshdRecording {
  /** A file whose bytes are the stdout (e.g. a recording). */
  stdoutFile?: string;
  stdout?: string;
  stderr?: string;
  exitCode?: number;
  /** Wait before answering (to make a slow AP). */
  delayMs?: number;
}

export interface SshdOptions {
  /** Exact command line → recorded answer. Any other command exits 127 with "not found". */
  commands: Record<string, SshdRecording>;
}

export interface KeyPair {
  /** OpenSSH private key text, unencrypted. */
  privateKey: string;
  /** `ssh-ed25519 AAAA… comment` */
  publicKey: string;
  /** SHA-256 fingerprint, base64 without the `SHA256:` prefix (as `ssh-keygen -l -E sha256` shows). */
  sha256: string;
}

export interface RunningSshd {
  host: '127.0.0.1';
  port: number;
  /** The user the tests log in as (the one running them). */
  username: string;
  /** A key sshd accepts. */
  clientPrivateKey: string;
  /** The host key fingerprint, for pinning. */
  hostKeySha256: string;
  dir: string;
  pid: number;
  /** sshd's log so far. */
  log(): string;
  stop(): Promise<void>;
}

/** Generates an ed25519 key pair with ssh-keygen into `dir/<name>` (and returns its contents). */
export function generateKeyPair(dir: string, name: string): KeyPair {
  const path = join(dir, name);
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', `lintel-test-${name}`, '-f', path], { stdio: 'ignore' });
  const fingerprint = execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', `${path}.pub`], { encoding: 'utf8' });
  const sha256 = /SHA256:([A-Za-z0-9+/]+)/.exec(fingerprint)?.[1];
  if (!sha256) throw new Error(`cannot read the fingerprint of ${path}.pub: ${fingerprint}`);
  return { privateKey: readFileSync(path, 'utf8'), publicKey: readFileSync(`${path}.pub`, 'utf8').trim(), sha256 };
}

/** Starts sshd on a free loopback port; stop() kills it and removes its keys. */
export async function startSshd(options: SshdOptions): Promise<RunningSshd> {
  const dir = mkdtempSync(join(tmpdir(), 'lintel-sshd-'));
  try {
    const host = generateKeyPair(dir, 'host_ed25519');
    const client = generateKeyPair(dir, 'client_ed25519');
    const username = userInfo().username;
    writeFileSync(join(dir, 'authorized_keys'), `${client.publicKey}\n`, { mode: 0o600 });
    writeFileSync(join(dir, 'commands.json'), JSON.stringify(options.commands), { mode: 0o600 });
    if (process.getuid?.() === 0 && !existsSync('/run/sshd')) {
      // sshd running as root needs its privilege-separation directory (the distribution's unit makes it)
      mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
    }
    let lastError: unknown;
    for (let i = 0; i < 3; i++) {
      const port = await freeTcpPort();
      const conf = join(dir, 'sshd_config');
      writeFileSync(
        conf,
        [
          `Port ${port}`,
          'ListenAddress 127.0.0.1',
          `HostKey ${join(dir, 'host_ed25519')}`,
          `PidFile ${join(dir, 'sshd.pid')}`,
          `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
          'PubkeyAuthentication yes',
          'PasswordAuthentication no',
          'KbdInteractiveAuthentication no',
          'UsePAM no',
          'PermitRootLogin prohibit-password',
          'StrictModes no',
          `AllowUsers ${username}`,
          'PermitTTY no',
          'X11Forwarding no',
          'AllowTcpForwarding no',
          'AllowAgentForwarding no',
          'LogLevel INFO',
          `ForceCommand ${PYTHON} ${FORCE_COMMAND} ${join(dir, 'commands.json')}`,
          '',
        ].join('\n'),
        { mode: 0o600 },
      );
      let peer: PeerProcess;
      try {
        peer = await startPeer(SSHD, ['-D', '-e', '-f', conf], {
          name: 'sshd',
          isReady: (output) => output.includes(`Server listening on 127.0.0.1 port ${port}`),
        });
      } catch (error) {
        lastError = error;
        if (/Address already in use|Bind to port/i.test((error as Error).message)) continue;
        throw error;
      }
      return {
        host: '127.0.0.1',
        port,
        username,
        clientPrivateKey: client.privateKey,
        hostKeySha256: host.sha256,
        dir,
        pid: peer.child.pid ?? -1,
        log: peer.output,
        async stop() {
          await peer.stop();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    }
    throw lastError;
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}
