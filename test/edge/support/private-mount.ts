/**
 * Runs a command in a private mount namespace (unshare(1), as root) after mounting something for it
 * alone: how the tests give a child what systemd's sandbox or a host's fstab would (a read-only path, a
 * noexec or a full filesystem), leaving the host's mounts as they are. Pass the result as the `via` of
 * startCli, or prepend it to an argv.
 */

/** `setup` is shell run first, with `$1` the `target` path; the command follows it. */
function privateMount(setup: string, target: string): [string, ...string[]] {
  return ['unshare', '--mount', '--propagation', 'private', '--', 'sh', '-c', `set -e; ${setup}; shift; exec "$@"`, 'sh', target];
}

/** `target` (an existing directory) read-only, as ProtectSystem=strict leaves a path not in ReadWritePaths=. */
export function readOnly(target: string): [string, ...string[]] {
  return privateMount('mount --bind "$1" "$1"; mount -o remount,bind,ro "$1"', target);
}

/** A fresh tmpfs at `target` on which nothing can be executed or mapped executable, as a noexec /tmp. */
export function noexecTmpfs(target: string): [string, ...string[]] {
  return privateMount('mount -t tmpfs -o noexec,mode=700 tmpfs "$1"', target);
}

/** A small tmpfs at `target`, already full: every write of data fails with ENOSPC. */
export function fullTmpfs(target: string): [string, ...string[]] {
  return privateMount('mount -t tmpfs -o size=16k,mode=700 tmpfs "$1"; head -c 1048576 /dev/zero > "$1/filler" 2>/dev/null || true', target);
}

/**
 * A tmpfs at `target` holding a copy of what `seed` holds, then filled with empty files until no inode
 * is left: space remains, but creating any file fails with ENOSPC, as on a disk out of inodes.
 */
export function noFreeInodesTmpfs(target: string, seed: string): [string, ...string[]] {
  const quoted = `'${seed.replace(/'/g, `'\\''`)}'`;
  return privateMount(
    `mount -t tmpfs -o nr_inodes=64,size=4m,mode=755 tmpfs "$1"; cp -a ${quoted}/. "$1"; i=0; while touch "$1/.filler-$i" 2>/dev/null; do i=$((i+1)); done`,
    target,
  );
}

/**
 * `passwd` (a file in /etc/passwd's format) in place of /etc/passwd: how a test gives a uid a user name
 * the host does not have, the service user `lintel-edge` say, without touching the host's accounts.
 */
export function passwdFrom(passwd: string): [string, ...string[]] {
  return privateMount('mount --bind "$1" /etc/passwd', passwd);
}
