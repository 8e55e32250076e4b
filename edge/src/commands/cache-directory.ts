/**
 * The executable's cache directory: the unit's, which the commands printed for the installer to run as
 * the service user give too, and its refusal: one another user owns, others may write, or that cannot be
 * made. The bundle's banner, which unpacks the data files there (edge/build/banner.mjs), and the SQLite
 * addon's loader (storage/native-addon.ts) refuse it alike, with the code `LINTEL_ADDON_DIR_REFUSED`.
 * It stays so until someone fixes it: the command ends with exit 2, which the unit does not restart.
 *
 * Imports nothing but shell-word.ts, which imports nothing, so that cli.ts can tell it apart before
 * anything else of the command line is loaded.
 */
import { shellWord } from '../ui/shell-word.js';

/**
 * Whether `err` is a refusal of the cache directory.
 *
 * @example
 * isCacheDirectoryRefusal(new NativeAddonError('refusing to load the SQLite addon from /tmp: …', 'LINTEL_ADDON_DIR_REFUSED')); // true
 */
export function isCacheDirectoryRefusal(err: unknown): err is Error {
  return err instanceof Error && (err as { code?: unknown }).code === 'LINTEL_ADDON_DIR_REFUSED';
}

/** The service user the install creates, and the unit's CacheDirectory= (edge/systemd/lintel-edge.service), which is that user's. */
export const SERVICE_USER = 'lintel-edge';
export const SERVICE_CACHE_DIRECTORY = '/var/cache/lintel-edge';

/**
 * A `lintel-edge` command line printed for the installer to run as `user`. The service user is given
 * the unit's cache directory, as the unit gives it: from a shell, the executable would unpack its SQLite
 * addon into /tmp, where a noexec mount refuses to load it. Any other user keeps its default
 * (`$TMPDIR/lintel-edge-<uid>`): the unit's cache directory is not its, and would be refused.
 * The user and each environment value are quoted here for the shell (a state directory may hold a
 * space); `args` is taken as already written for it, each value in it quoted with shellWord.
 *
 * @example
 * runAsCommand('lintel-edge', 'ledger verify --ledger /var/lib/lintel-edge/ledger.sqlite');
 * // 'runuser -u lintel-edge -- env CACHE_DIRECTORY=/var/cache/lintel-edge lintel-edge ledger verify --ledger /var/lib/lintel-edge/ledger.sqlite'
 * runAsCommand('alice', 'doctor --config /etc/lintel-edge/config.yaml', { STATE_DIRECTORY: '/srv/site one' });
 * // "runuser -u alice -- env STATE_DIRECTORY='/srv/site one' lintel-edge doctor --config /etc/lintel-edge/config.yaml"
 */
export function runAsCommand(user: string, args: string, env: Record<string, string> = {}): string {
  const vars = { ...env, ...(user === SERVICE_USER ? { CACHE_DIRECTORY: SERVICE_CACHE_DIRECTORY } : {}) };
  const assignments = Object.entries(vars).map(([name, value]) => `${name}=${shellWord(value)}`);
  return `runuser -u ${shellWord(user)} -- ${assignments.length > 0 ? `env ${assignments.join(' ')} ` : ''}lintel-edge ${args}`;
}
