/**
 * Who owns a state file or directory, in words an operator can act on. A state file created by another
 * user (a root `lintel-edge doctor` on a fresh install) is the usual reason the service user cannot
 * write it, and the fix is to run as, or chown to, the owner these name.
 */
import { readFileSync, statSync } from 'node:fs';

/**
 * The user name of `uid` from /etc/passwd; undefined when it is not there (or cannot be read).
 *
 * @example
 * userNameOf(0); // 'root'
 */
export function userNameOf(uid: number): string | undefined {
  let passwd: string;
  try {
    passwd = readFileSync('/etc/passwd', 'utf8');
  } catch {
    return undefined;
  }
  for (const line of passwd.split('\n')) {
    const [name, , id] = line.split(':');
    if (name && id !== undefined && id.trim() !== '' && Number(id) === uid) return name;
  }
  return undefined;
}

/** `root (uid 0)`, or `uid 1234` for a uid without a name. */
export function describeUser(uid: number): string {
  const name = userNameOf(uid);
  return name ? `${name} (uid ${uid})` : `uid ${uid}`;
}

/** This process's effective uid; undefined where there are none (not on Linux). */
export function currentUid(): number | undefined {
  return process.geteuid?.();
}

/**
 * A file's owner and mode, and who is asking.
 *
 * @example
 * describeOwnership('/var/lib/lintel-edge/ledger.sqlite');
 * // 'owned by root (uid 0), mode 644; this process runs as lintel-edge (uid 998)'
 */
export function describeOwnership(path: string): string {
  let owner: string;
  try {
    const stat = statSync(path);
    owner = `owned by ${describeUser(stat.uid)}, mode ${(stat.mode & 0o777).toString(8)}`;
  } catch (err) {
    owner = `not readable (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`;
  }
  const uid = currentUid();
  return uid === undefined ? owner : `${owner}; this process runs as ${describeUser(uid)}`;
}
