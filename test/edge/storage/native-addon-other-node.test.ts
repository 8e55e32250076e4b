/**
 * An addon built for another Node (better-sqlite3 not rebuilt after a Node upgrade): the loader's
 * refusal names both module versions, and the error says so and to rebuild, instead of blaming a noexec
 * mount, which unpacking elsewhere would not cure.
 */
import t from 'tap';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadAddonFrom, NativeAddonError } from '../../../edge/src/storage/native-addon.js';
import { buildStaleAddon, STALE_MODULE_VERSION } from '../support/stale-addon.js';

t.test('an addon for another NODE_MODULE_VERSION: named as such, with the rebuild, and no noexec', async (t) => {
  const dir = t.testdir({ build: {} });
  const stale = readFileSync(buildStaleAddon(join(dir, 'build')));
  const cache = join(dir, 'cache');
  mkdirSync(cache, { mode: 0o700 });
  let err: unknown;
  try {
    loadAddonFrom(stale, cache);
  } catch (thrown) {
    err = thrown;
  }
  if (!(err instanceof NativeAddonError)) throw new Error(`expected a NativeAddonError, got ${String(err)}`);
  t.equal(err.code, 'LINTEL_ADDON_UNLOADABLE');
  t.match(
    err.message,
    new RegExp(
      `^cannot load the SQLite addon unpacked to ${cache}/better_sqlite3-[0-9a-f]{16}\\.node \\(The module '.*' was compiled against a different Node\\.js version using NODE_MODULE_VERSION ${STALE_MODULE_VERSION}\\. ` +
        `This version of Node\\.js requires NODE_MODULE_VERSION ${process.versions.modules}\\..*\\)\\. ` +
        `The addon was built for another Node \\(a different NODE_MODULE_VERSION\\): rebuild the executable \\(npm rebuild better-sqlite3, then npm run build:edge\\)$`,
    ),
  );
  t.notMatch(err.message, /mounted noexec/, 'the mount is not blamed');
  t.notMatch(err.message, /\n/, 'one line, for the journal');
});
