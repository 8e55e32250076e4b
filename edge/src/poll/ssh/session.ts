/**
 * The SSH port: connect to an AP with a key, run one command, read its bounded output; and its ssh2
 * adapter. Domain code sees strings, never ssh2.
 */
import { createHash } from 'node:crypto';
import type { LookupAddress } from 'node:dns';
import { connect, isIP, type Socket } from 'node:net';
import ssh2 from 'ssh2';
import { socketLookup } from '../../../../shared/lookup.js';

// ssh2 is CommonJS: its named exports are not visible to Node's ESM loader
const { Client } = ssh2;
import type { SshTarget } from '../types.js';

export interface ExecResult {
  stdout: string;
  stderr: string;
  /** null when the command was ended by a signal. */
  exitCode: number | null;
}

/** An authenticated SSH connection to one AP. */
export interface SshSession {
  /** Runs a command; rejects when stdout plus stderr exceed `maxOutputBytes`. */
  exec(command: string, options: { maxOutputBytes: number }): Promise<ExecResult>;
  /** Drops the connection; a running exec rejects. Safe to call twice. */
  close(): void;
}

/**
 * Connects and authenticates; `timeoutMs` bounds the TCP connect plus the SSH handshake, and `signal`
 * drops a connection still in progress (the socket is closed, the promise rejects). `addresses`: the
 * target host's, as the poller looked them up for this poll; the host name is then not looked up again.
 */
export type OpenSshSession = (
  target: SshTarget,
  options: { timeoutMs: number; signal?: AbortSignal; addresses?: readonly LookupAddress[] },
) => Promise<SshSession>;

/** SSH connection failures with a stable code; messages never carry key material. */
export class SshError extends Error {
  constructor(
    readonly code: 'host_key_mismatch' | 'auth_failed' | 'unreachable' | 'timeout' | 'bad_key' | 'output_too_large' | 'closed' | 'failed',
    message: string,
  ) {
    super(message);
    this.name = 'SshError';
  }
}

/** `SHA256:abc…=` or `abc…` → `abc…` (the form `ssh-keygen -l -E sha256` prints after the prefix). */
export function normalizeFingerprint(fingerprint: string): string {
  return fingerprint.trim().replace(/^SHA256:/i, '').replace(/=+$/, '');
}

/** The SHA-256 fingerprint of a host key blob, as `ssh-keygen -l -E sha256` prints it (without the prefix). */
export function fingerprintOf(keyBlob: Buffer): string {
  return createHash('sha256').update(keyBlob).digest('base64').replace(/=+$/, '');
}

function describeConnectError(error: Error & { level?: string; code?: string }): SshError {
  if (error.level === 'client-authentication') {
    return new SshError('auth_failed', 'authentication failed (key not accepted)');
  }
  if (error.code === 'ECONNREFUSED' || error.code === 'EHOSTUNREACH' || error.code === 'ENETUNREACH') {
    return new SshError('unreachable', `connection failed (${error.code})`);
  }
  if (error.code === 'ECONNRESET') return new SshError('unreachable', 'connection reset by the AP');
  if (error.level === 'client-timeout') return new SshError('timeout', 'no SSH handshake before the timeout');
  return new SshError('failed', `ssh: ${error.message}`);
}

/**
 * A TCP connection to a host name already looked up: the socket's lookup answers with `addresses`,
 * never asking DNS, in the form the socket asks for (all of them for happy eyeballs, as ssh2's own
 * connect would try them).
 */
function connectToAddresses(host: string, port: number, addresses: readonly LookupAddress[]): Socket {
  const lookup = socketLookup((_hostname, _options, callback) => process.nextTick(callback, null, [...addresses]));
  return connect({ host, port, lookup });
}

/**
 * The ssh2 adapter: public-key auth only, optional host-key pinning, no agent, no keyboard-interactive.
 * Given the host's `addresses`, it connects to them itself and hands ssh2 the socket: ssh2 would look
 * the name up with dns.lookup, which a poll's deadline cannot cancel.
 */
export const openSsh2Session: OpenSshSession = (target, { timeoutMs, signal, addresses }) =>
  new Promise<SshSession>((resolve, reject) => {
    if (signal?.aborted) return reject(new SshError('closed', 'aborted before connecting'));
    const conn = new Client();
    const pinned = target.hostKeySha256 ? normalizeFingerprint(target.hostKeySha256) : undefined;
    let hostKeyMismatch = false;
    let ready = false;
    let closed = false;
    /** Our own connection to the looked-up addresses, when given; ssh2 does not have it until it parsed the key. */
    let sock: Socket | undefined;
    const failExec = new Set<(error: Error) => void>();

    const onAbort = () => {
      if (!ready) reject(new SshError('closed', 'connection aborted'));
      close();
    };
    const close = () => {
      if (closed) return;
      closed = true;
      signal?.removeEventListener('abort', onAbort);
      for (const fail of failExec) fail(new SshError('closed', 'connection closed'));
      conn.removeAllListeners('ready');
      conn.on('error', () => undefined);
      conn.destroy();
      sock?.destroy();
    };

    conn.on('error', (error: Error & { level?: string; code?: string }) => {
      if (!ready) {
        close();
        reject(
          hostKeyMismatch
            ? new SshError('host_key_mismatch', 'host key does not match the pinned SHA-256 fingerprint')
            : describeConnectError(error),
        );
        return;
      }
      for (const fail of failExec) fail(new SshError('failed', `ssh: ${error.message}`));
    });
    conn.on('close', () => {
      for (const fail of failExec) fail(new SshError('closed', 'connection closed by the AP'));
      if (!ready && !closed) {
        closed = true;
        reject(new SshError('unreachable', 'connection closed before authentication'));
      }
    });
    signal?.addEventListener('abort', onAbort, { once: true });
    conn.on('ready', () => {
      ready = true;
      resolve({
        exec: (command, { maxOutputBytes }) =>
          new Promise<ExecResult>((resolveExec, rejectExec) => {
            if (closed) return rejectExec(new SshError('closed', 'connection closed'));
            let done = false;
            const fail = (error: Error) => {
              if (done) return;
              done = true;
              failExec.delete(fail);
              rejectExec(error);
            };
            failExec.add(fail);
            conn.exec(command, (error, stream) => {
              if (error) return fail(new SshError('failed', `exec refused: ${error.message}`));
              const stdout: Buffer[] = [];
              const stderr: Buffer[] = [];
              let size = 0;
              const collect = (into: Buffer[]) => (chunk: Buffer) => {
                if (done) return;
                size += chunk.length;
                if (size > maxOutputBytes) {
                  fail(new SshError('output_too_large', `output larger than ${maxOutputBytes} bytes`));
                  stream.close();
                  return;
                }
                into.push(chunk);
              };
              stream.on('data', collect(stdout));
              stream.stderr.on('data', collect(stderr));
              stream.on('close', (code: number | null | undefined) => {
                if (done) return;
                done = true;
                failExec.delete(fail);
                resolveExec({
                  stdout: Buffer.concat(stdout).toString('utf8'),
                  stderr: Buffer.concat(stderr).toString('utf8'),
                  exitCode: typeof code === 'number' ? code : null,
                });
              });
            });
          }),
        close,
      });
    });

    try {
      sock = addresses && isIP(target.host) === 0 ? connectToAddresses(target.host, target.port, addresses) : undefined;
      conn.connect({
        host: target.host,
        port: target.port,
        sock,
        username: target.username,
        privateKey: target.privateKey,
        readyTimeout: Math.max(1, timeoutMs),
        agent: undefined,
        tryKeyboard: false,
        keepaliveInterval: 0,
        hostVerifier: (key: Buffer) => {
          if (!pinned) return true;
          hostKeyMismatch = fingerprintOf(key) !== pinned;
          return !hostKeyMismatch;
        },
      });
    } catch (error) {
      close();
      const message = (error as Error).message;
      reject(
        /privateKey/i.test(message)
          ? new SshError('bad_key', 'the private key cannot be parsed (expected an unencrypted OpenSSH or PEM key)')
          : new SshError('failed', `ssh: ${message}`),
      );
    }
  });
