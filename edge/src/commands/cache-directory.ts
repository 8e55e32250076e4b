/**
 * The executable's cache directory refused: one another user owns, others may write, or that cannot be
 * made. The bundle's banner, which unpacks the data files there (edge/build/banner.mjs), and the SQLite
 * addon's loader (storage/native-addon.ts) refuse it alike, with the code `LINTEL_ADDON_DIR_REFUSED`.
 * It stays so until someone fixes it: the command ends with exit 2, which the unit does not restart.
 *
 * Imports nothing, so that cli.ts can tell it apart before anything else of the command line is loaded.
 */

/**
 * Whether `err` is a refusal of the cache directory.
 *
 * @example
 * isCacheDirectoryRefusal(new NativeAddonError('refusing to load the SQLite addon from /tmp: …', 'LINTEL_ADDON_DIR_REFUSED')); // true
 */
export function isCacheDirectoryRefusal(err: unknown): err is Error {
  return err instanceof Error && (err as { code?: unknown }).code === 'LINTEL_ADDON_DIR_REFUSED';
}
