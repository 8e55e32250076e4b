/**
 * The executable's banner unpacks the data it carries into `data-<digest>` of its cache directory once,
 * marking a whole copy with `.complete`. A `data-<digest>` left without the marker (an unpack cut short;
 * systemd-tmpfiles ageing /tmp, which removes the never-read empty marker first) once made every command
 * crash at load, for good: the rename onto it failed with ENOTEMPTY. It is now replaced, and where even
 * that fails, the process uses its own fresh copy.
 *
 * The banner is run here as the executable runs it, with a stand-in for `node:sea` that holds the assets.
 */
import t, { type Test } from 'tap';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BANNER } from '../../../edge/build/banner.mjs';

const DIGEST = 'f00dfeedc0ffee00'.repeat(4);
const DATA = `data-${DIGEST.slice(0, 16)}`;
const FILES: Record<string, string> = {
  'firmware-bindings/dialects/aruba-aos.json': '{"dialect":"aruba-aos"}',
  'edge/src/zones/migrations/001-init.sql': 'CREATE TABLE t (x);',
};

/** `__lintelFileUrl` of a fresh banner, running as the single executable that carries FILES. */
function bannerInExecutable(): (file: string) => string {
  const assets: Record<string, string> = { ...FILES, 'lintel-manifest.json': JSON.stringify({ digest: DIGEST, files: Object.keys(FILES) }) };
  const sea = {
    isSea: () => true,
    getAsset(name: string, encoding?: string): string | ArrayBuffer {
      const text = assets[name];
      if (text === undefined) throw new Error(`no SEA asset ${name}`);
      if (encoding) return text;
      const bytes = Buffer.from(text);
      return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length);
    },
  };
  const realRequire = createRequire(import.meta.url);
  const seaRequire = (id: string): unknown => (id === 'node:sea' ? sea : realRequire(id));
  return new Function('require', '__dirname', `${BANNER}\nreturn __lintelFileUrl;`)(seaRequire, '/nonexistent') as (file: string) => string;
}

/** A private cache directory (mode 700, as the banner demands) as $CACHE_DIRECTORY for this test. */
function cacheDirectory(t: Test): string {
  const cache = join(t.testdir({}), 'cache');
  mkdirSync(cache, { mode: 0o700 });
  const before = process.env.CACHE_DIRECTORY;
  process.env.CACHE_DIRECTORY = cache;
  t.teardown(() => {
    if (before === undefined) delete process.env.CACHE_DIRECTORY;
    else process.env.CACHE_DIRECTORY = before;
  });
  return cache;
}

/** What tmpfiles ageing leaves: one data file survives, the marker and the rest are gone. */
function staleData(cache: string): string {
  const stale = join(cache, DATA);
  mkdirSync(join(stale, 'firmware-bindings/dialects'), { recursive: true, mode: 0o700 });
  writeFileSync(join(stale, 'firmware-bindings/dialects/aruba-aos.json'), '{"dialect":"aruba-aos"}');
  return stale;
}

t.test('a first start unpacks the data whole and marks it', async (t) => {
  const cache = cacheDirectory(t);
  const fileUrl = bannerInExecutable();
  const url = fileUrl('edge/src/zones/migrations/001-init.sql');
  t.equal(fileURLToPath(url), join(cache, DATA, 'edge/src/zones/migrations/001-init.sql'));
  for (const [file, text] of Object.entries(FILES)) t.equal(readFileSync(join(cache, DATA, file), 'utf8'), text, file);
  t.ok(existsSync(join(cache, DATA, '.complete')));
  t.same(readdirSync(cache), [DATA], 'no temporary copy left');
});

t.test('a data directory without its marker, some files surviving: replaced, not a crash', async (t) => {
  const cache = cacheDirectory(t);
  const stale = staleData(cache);
  const fileUrl = bannerInExecutable();
  const url = fileUrl('edge/src/zones/migrations/001-init.sql');
  t.equal(fileURLToPath(url), join(stale, 'edge/src/zones/migrations/001-init.sql'), 'the data directory is used');
  for (const [file, text] of Object.entries(FILES)) t.equal(readFileSync(join(stale, file), 'utf8'), text, `${file} is whole again`);
  t.ok(existsSync(join(stale, '.complete')), 'and marked complete');
  t.same(readdirSync(cache), [DATA], 'no temporary copy left');
});

t.test('a stale data directory that cannot be removed: this process uses its fresh copy', async (t) => {
  // Registered before the test directory, so it runs before tap removes it.
  const immutable: string[] = [];
  t.teardown(() => {
    for (const path of immutable) execFileSync('chattr', ['-i', path]);
  });
  const cache = cacheDirectory(t);
  const stale = staleData(cache);
  // Immutable: nothing in it can be removed, so the stale directory stays (as root too).
  const dialects = join(stale, 'firmware-bindings/dialects');
  execFileSync('chattr', ['+i', dialects]);
  immutable.push(dialects);
  const fileUrl = bannerInExecutable();
  const path = fileURLToPath(fileUrl('edge/src/zones/migrations/001-init.sql'));
  const fresh = join(cache, `${DATA}.${process.pid}.tmp`);
  t.equal(path, join(fresh, 'edge/src/zones/migrations/001-init.sql'), 'the fresh copy is used');
  for (const [file, text] of Object.entries(FILES)) t.equal(readFileSync(join(fresh, file), 'utf8'), text, `${file} is there`);
  t.notOk(existsSync(join(stale, '.complete')), 'the stale directory is not taken for a whole one');
});
