/**
 * The executable's banner unpacks the data it carries into `data-<digest>` of its cache directory once,
 * marking a whole copy with `.complete`. A `data-<digest>` left without the marker (an unpack cut short;
 * systemd-tmpfiles ageing /tmp, which removes the never-read empty marker first) once made every command
 * crash at load, for good: the rename onto it failed with ENOTEMPTY. It is now replaced, and where even
 * that fails, the process uses its own fresh copy, which a later start removes once the process ended.
 * Commands starting together over a stale copy each see it stale: one once removed the whole copy the
 * other had just put in its place, under the other's reads. The stale copy is now moved aside in one
 * rename before it is removed.
 *
 * The banner is run here as the executable runs it, with a stand-in for `node:sea` that holds the assets
 * (in this process, or in child processes started together).
 */
import t, { type Test } from 'tap';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

t.test('a stale data directory whose contents cannot be removed: moved aside whole, the fresh copy takes its place', async (t) => {
  // Registered before the test directory, so it runs before tap removes it; wherever the directory went.
  const immutable: string[] = [];
  t.teardown(() => {
    for (const path of immutable) if (existsSync(path)) execFileSync('chattr', ['-i', path]);
  });
  const cache = cacheDirectory(t);
  const stale = staleData(cache);
  // Immutable: nothing in it can be removed (as root too), but the directory can be moved.
  const dialects = join(stale, 'firmware-bindings/dialects');
  execFileSync('chattr', ['+i', dialects]);
  immutable.push(dialects, join(cache, `${DATA}.stale.${process.pid}`, 'firmware-bindings/dialects'));
  const fileUrl = bannerInExecutable();
  const path = fileURLToPath(fileUrl('edge/src/zones/migrations/001-init.sql'));
  t.equal(path, join(stale, 'edge/src/zones/migrations/001-init.sql'), 'the data directory is used');
  for (const [file, text] of Object.entries(FILES)) t.equal(readFileSync(join(stale, file), 'utf8'), text, `${file} is there`);
  t.ok(existsSync(join(stale, '.complete')), 'and marked complete');
  t.same(readdirSync(cache).sort(), [DATA, `${DATA}.stale.${process.pid}`], 'the stale copy is beside it, for a later start to remove');
});

/** The assets of an executable carrying `count` files (more files: a longer unpack and removal). */
function manyAssets(count: number): { assets: Record<string, string>; files: Record<string, string> } {
  const files: Record<string, string> = {};
  for (let i = 0; i < count; i++) files[`firmware-bindings/dialects/d${String(i).padStart(4, '0')}.json`] = `{"dialect":"d${i}","padding":"${'x'.repeat(512)}"}`;
  return { assets: { ...files, 'lintel-manifest.json': JSON.stringify({ digest: DIGEST, files: Object.keys(files) }) }, files };
}

/**
 * A child process that runs the banner as the executable does, once told to on stdin, then reads every
 * file it carries through the path the banner gave, `passes` times, and prints what it found.
 */
const CHILD = `
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
const { BANNER } = await import(process.argv[2]);
const assets = JSON.parse(readFileSync(process.argv[3], 'utf8'));
const passes = Number(process.argv[4]);
const sea = {
  isSea: () => true,
  getAsset(name, encoding) {
    const text = assets[name];
    if (text === undefined) throw new Error('no SEA asset ' + name);
    if (encoding) return text;
    const bytes = Buffer.from(text);
    return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length);
  },
};
const realRequire = createRequire(import.meta.url);
const fileUrl = new Function('require', '__dirname', BANNER + '\\nreturn __lintelFileUrl;')((id) => (id === 'node:sea' ? sea : realRequire(id)), '/nonexistent');
const files = JSON.parse(assets['lintel-manifest.json']).files;
process.stdout.write('ready\\n');
process.stdin.once('data', () => {
  const failures = [];
  let root = null;
  try {
    root = fileURLToPath(fileUrl(''));
    for (let pass = 0; pass < passes; pass++) {
      for (const file of files) {
        try {
          if (readFileSync(join(root, file), 'utf8') !== assets[file]) failures.push(file + ': not what was unpacked');
        } catch (err) {
          failures.push(file + ': ' + err.code);
        }
      }
    }
  } catch (err) {
    failures.push('banner: ' + err.message);
  }
  process.stdout.write(JSON.stringify({ root, failures: failures.slice(0, 5) }) + '\\n');
  process.exit(0);
});
`;

interface ChildRun {
  pid: number;
  root: string | null;
  failures: string[];
}

/** Starts `count` children over `cache`, lets them all unpack at once, and answers what each found. */
async function runTogether(dir: string, cache: string, assets: Record<string, string>, count: number, passes = 3): Promise<ChildRun[]> {
  const script = join(dir, 'child.mjs');
  const assetsFile = join(dir, 'assets.json');
  if (!existsSync(script)) writeFileSync(script, CHILD);
  writeFileSync(assetsFile, JSON.stringify(assets));
  const env: NodeJS.ProcessEnv = { ...process.env, CACHE_DIRECTORY: cache };
  // The test runner's hooks stay out of the children.
  delete env.NODE_OPTIONS;
  const banner = new URL('../../../edge/build/banner.mjs', import.meta.url).href;
  const children = Array.from({ length: count }, () => {
    const child = spawn(process.execPath, [script, banner, assetsFile, String(passes)], { env, stdio: ['pipe', 'pipe', 'inherit'] });
    let out = '';
    const ready = new Promise<void>((resolve) => {
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.startsWith('ready\n')) resolve();
      });
    });
    const exited = new Promise<ChildRun>((resolve, reject) => {
      child.on('error', reject);
      child.on('exit', (code) => {
        if (code !== 0) reject(new Error(`a banner child exited ${code}`));
        else resolve({ pid: child.pid!, ...(JSON.parse(out.slice('ready\n'.length)) as { root: string | null; failures: string[] }) });
      });
    });
    return { child, ready, exited };
  });
  await Promise.all(children.map((c) => c.ready));
  for (const { child } of children) child.stdin.end('go\n');
  return Promise.all(children.map((c) => c.exited));
}

t.test('commands starting together over a stale data directory: each ends with a whole copy, and none is left behind', async (t) => {
  const dir = t.testdir({});
  const cache = cacheDirectory(t);
  const { assets, files } = manyAssets(300);
  const ROUNDS = 20;
  const TOGETHER = 4;
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of readdirSync(cache)) rmSync(join(cache, name), { recursive: true, force: true });
    // What tmpfiles ageing leaves: part of the files, no marker.
    for (const file of Object.keys(files).slice(0, 150)) {
      mkdirSync(join(cache, DATA, 'firmware-bindings/dialects'), { recursive: true, mode: 0o700 });
      writeFileSync(join(cache, DATA, file), files[file]!);
    }
    const runs = await runTogether(dir, cache, assets, TOGETHER);
    t.same(
      runs.map((r) => r.root),
      runs.map(() => join(cache, DATA)),
      `round ${round}: every command uses the data directory`,
    );
    t.same(
      runs.flatMap((r) => r.failures),
      [],
      `round ${round}: every file read whole, by each, while the others unpacked`,
    );
    t.same(readdirSync(cache), [DATA], `round ${round}: no .tmp or .stale copy left`);
    t.ok(existsSync(join(cache, DATA, '.complete')), `round ${round}: the copy is marked whole`);
    t.same(readdirSync(join(cache, DATA, 'firmware-bindings/dialects')).length, 300, `round ${round}: with every file`);
  }
});

t.test('a stale data directory that can be neither moved nor removed: the fresh copy is used, and removed by a start after it', async (t) => {
  const immutable: string[] = [];
  t.teardown(() => {
    for (const path of immutable) execFileSync('chattr', ['-i', path]);
  });
  const dir = t.testdir({});
  const cache = cacheDirectory(t);
  const stale = staleData(cache);
  // Immutable: it can be neither renamed nor emptied (as root too).
  execFileSync('chattr', ['+i', stale]);
  immutable.push(stale);
  const assets = { ...FILES, 'lintel-manifest.json': JSON.stringify({ digest: DIGEST, files: Object.keys(FILES) }) };
  const [first] = await runTogether(dir, cache, assets, 1);
  const fresh = join(cache, `${DATA}.${first!.pid}.tmp`);
  t.equal(first!.root, fresh, 'that process used its own fresh copy');
  t.same(first!.failures, [], 'which holds every file');
  t.notOk(existsSync(join(stale, '.complete')), 'the stale directory is not taken for a whole one');

  // The stale directory can be removed again (tmpfiles, an operator); the process that used its fresh copy has ended.
  execFileSync('chattr', ['-i', stale]);
  immutable.length = 0;
  const [next] = await runTogether(dir, cache, assets, 1);
  t.equal(next!.root, join(cache, DATA), 'the next start replaces the stale directory');
  t.same(next!.failures, []);
  t.same(readdirSync(cache), [DATA], 'and removes the copy the ended process left');
});
