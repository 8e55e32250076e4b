/**
 * The executable's banner unpacks the data it carries into a copy of its own, `data-<digest>-<pid>-<random>`
 * of its cache directory, marks it whole with `.complete`, and publishes it by the symlink `data-<digest>`;
 * later starts use the copy the symlink names.
 *
 * A `data-<digest>` directory left without the marker (an unpack cut short; systemd-tmpfiles ageing /tmp,
 * which removes the never-read empty marker first) once made every command crash at load, for good: the
 * rename onto it failed with ENOTEMPTY. It is now moved aside, and where even that fails, the process
 * uses its own copy, which a later start removes once the process ended. Commands starting together over
 * it once removed, or moved aside for a moment, the whole copy another had just put in place, under the
 * other's reads (ENOENT). Now no start moves or removes a copy another process may read: a copy goes only
 * once its unpacker has ended, the symlink names another, and no live process marks it as read.
 *
 * The banner is run here as the executable runs it, with a stand-in for `node:sea` that holds the assets
 * (in this process, or in child processes started together).
 */
import t, { type Test } from 'tap';
import { execFileSync, spawn } from 'node:child_process';
import type * as nodeFs from 'node:fs';
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { BANNER } from '../../../edge/build/banner.mjs';

const DIGEST = 'f00dfeedc0ffee00'.repeat(4);
const DATA = `data-${DIGEST.slice(0, 16)}`;
/** The name of one unpack's copy. */
const COPY = new RegExp(`^${DATA}-([0-9]+)-[0-9a-f]{12}$`);
const FILES: Record<string, string> = {
  'firmware-bindings/dialects/aruba-aos.json': '{"dialect":"aruba-aos"}',
  'edge/src/zones/migrations/001-init.sql': 'CREATE TABLE t (x);',
};
const ASSETS = { ...FILES, 'lintel-manifest.json': JSON.stringify({ digest: DIGEST, files: Object.keys(FILES) }) };

/** What a banner's file operations are watched with: each is called after the operation. */
interface FsWatch {
  exists?(path: string, found: boolean): void;
  renamed?(from: string, to: string): void;
}

/**
 * `__lintelFileUrl` of a fresh banner, running as the single executable that carries FILES. As another
 * process (`pid`, a live one) and with its `existsSync` and `renameSync` watched, it replays in this
 * process an order in which two starts' steps can interleave.
 */
function bannerInExecutable(pid: number = process.pid, watch: FsWatch = {}): (file: string) => string {
  const sea = {
    isSea: () => true,
    getAsset(name: string, encoding?: string): string | ArrayBuffer {
      const text = (ASSETS as Record<string, string>)[name];
      if (text === undefined) throw new Error(`no SEA asset ${name}`);
      if (encoding) return text;
      const bytes = Buffer.from(text);
      return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length);
    },
  };
  const realRequire = createRequire(import.meta.url);
  const fs = realRequire('node:fs') as typeof nodeFs;
  const watched = {
    ...fs,
    existsSync(path: string) {
      const found = fs.existsSync(path);
      watch.exists?.(path, found);
      return found;
    },
    renameSync(from: string, to: string) {
      fs.renameSync(from, to);
      watch.renamed?.(from, to);
    },
  };
  const seaRequire = (id: string): unknown => (id === 'node:sea' ? sea : id === 'node:fs' ? watched : realRequire(id));
  const asProcess = new Proxy(process, {
    get(target, key) {
      if (key === 'pid') return pid;
      const value: unknown = Reflect.get(target, key);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return new Function('require', '__dirname', 'process', `${BANNER}\nreturn __lintelFileUrl;`)(seaRequire, '/nonexistent', asProcess) as (file: string) => string;
}

/** The directory a banner gave as its root. */
const rootOf = (fileUrl: (file: string) => string): string => fileURLToPath(fileUrl('')).replace(/\/$/, '');

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

/** The copy the symlink `data-<digest>` publishes, or undefined when it is no symlink. */
function published(cache: string): string | undefined {
  const link = join(cache, DATA);
  return existsSync(link) && lstatSync(link).isSymbolicLink() ? join(cache, readlinkSync(link)) : undefined;
}

/** What tmpfiles ageing leaves of a `data-<digest>` directory an earlier banner made: one data file, no marker. */
function staleData(cache: string): string {
  const stale = join(cache, DATA);
  mkdirSync(join(stale, 'firmware-bindings/dialects'), { recursive: true, mode: 0o700 });
  writeFileSync(join(stale, 'firmware-bindings/dialects/aruba-aos.json'), '{"dialect":"aruba-aos"}');
  return stale;
}

t.test('a first start unpacks the data whole into a copy of its own and publishes it', async (t) => {
  const cache = cacheDirectory(t);
  const root = rootOf(bannerInExecutable());
  t.match(basename(root), COPY);
  t.equal(basename(root).split('-')[2], String(process.pid), 'named after the process that unpacked it');
  t.equal(published(cache), root, 'the symlink names it');
  for (const [file, text] of Object.entries(FILES)) t.equal(readFileSync(join(cache, DATA, file), 'utf8'), text, file);
  t.ok(existsSync(join(root, '.complete')));
  t.same(readdirSync(cache).sort(), [DATA, basename(root)], 'nothing else left');

  const again = rootOf(bannerInExecutable());
  t.equal(again, root, 'the next start uses the published copy');
  t.same(readdirSync(cache).sort(), [DATA, basename(root)], 'and unpacks nothing');
  t.match(readdirSync(join(root, '.users')), [new RegExp(`^${process.pid}-[0-9a-f]{12}$`)], 'marking it as read by this process');
});

t.test('a data directory an earlier banner left without its marker, some files surviving: replaced, not a crash', async (t) => {
  const cache = cacheDirectory(t);
  staleData(cache);
  const root = rootOf(bannerInExecutable());
  t.match(basename(root), COPY);
  t.equal(published(cache), root, 'a symlink to a whole copy takes its place');
  for (const [file, text] of Object.entries(FILES)) t.equal(readFileSync(join(cache, DATA, file), 'utf8'), text, `${file} is whole again`);
  t.ok(existsSync(join(cache, DATA, '.complete')), 'and marked complete');
  t.same(readdirSync(cache).sort(), [DATA, basename(root)], 'the stale directory is gone');
});

t.test('a whole data directory an earlier banner left is used as it is', async (t) => {
  const cache = cacheDirectory(t);
  const earlier = join(cache, DATA);
  for (const [file, text] of Object.entries(FILES)) {
    mkdirSync(join(earlier, file, '..'), { recursive: true, mode: 0o700 });
    writeFileSync(join(earlier, file), text);
  }
  writeFileSync(join(earlier, '.complete'), '');
  t.equal(rootOf(bannerInExecutable()), earlier);
  t.same(readdirSync(cache), [DATA], 'nothing unpacked, nothing moved');
});

t.test('a stale data directory whose contents cannot be removed: moved aside whole, removed by a later start', async (t) => {
  // Registered before the test directory, so it runs before tap removes it; wherever the directory went.
  let cache = '';
  const immutable = () => (cache ? readdirSync(cache).map((name) => join(cache, name, 'firmware-bindings/dialects')) : []);
  t.teardown(() => {
    for (const path of immutable()) if (existsSync(path)) execFileSync('chattr', ['-i', path]);
  });
  cache = cacheDirectory(t);
  const stale = staleData(cache);
  // Immutable: nothing in it can be removed (as root too), but the directory can be moved.
  execFileSync('chattr', ['+i', join(stale, 'firmware-bindings/dialects')]);
  const root = rootOf(bannerInExecutable());
  t.equal(published(cache), root, 'the fresh copy is published');
  for (const [file, text] of Object.entries(FILES)) t.equal(readFileSync(join(root, file), 'utf8'), text, `${file} is there`);
  const aside = readdirSync(cache).filter((name) => name !== DATA && name !== basename(root));
  t.match(aside, [new RegExp(`^${DATA}\\.aside-${process.pid}-[0-9a-f]{12}$`)], 'the stale copy is beside it, for a later start to remove');

  for (const path of immutable()) if (existsSync(path)) execFileSync('chattr', ['-i', path]);
  t.equal(rootOf(bannerInExecutable()), root, 'a later start uses the same copy');
  t.same(readdirSync(cache).sort(), [DATA, basename(root)], 'and removes the stale one');
});

t.test('a start that saw the data directory stale moves it aside after another start put its copy in place: that copy stays readable', async (t) => {
  const cache = cacheDirectory(t);
  const stale = staleData(cache);
  const marker = join(stale, '.complete');
  const file = 'edge/src/zones/migrations/001-init.sql';
  const read = (fileUrl: (file: string) => string): string => {
    try {
      return readFileSync(fileURLToPath(fileUrl(file)), 'utf8') === FILES[file] ? 'whole' : 'changed';
    } catch (err) {
      return (err as NodeJS.ErrnoException).code ?? 'error';
    }
  };
  let other: ((file: string) => string) | undefined;
  const readsOfOther: string[] = [];
  let staleLooks = 0;
  // The late start runs as this process's parent, alive all along, so neither start takes the other's copy for one an ended process left.
  const late = bannerInExecutable(process.ppid, {
    exists(path, found) {
      // Its last look before it moves the directory found it stale: the other start runs whole, now.
      if (path === marker && !found && ++staleLooks === 2) {
        other = bannerInExecutable();
        readsOfOther.push(read(other));
      }
    },
    renamed(from) {
      if (from === stale && other) readsOfOther.push(read(other));
    },
  });
  const lateRoot = rootOf(late);
  t.ok(other, 'the other start ran between the late start’s look and its move');
  t.same(readsOfOther, ['whole', 'whole'], 'the other start reads its copy whole, before the late start’s move and right after it');
  t.equal(read(other!), 'whole', 'and after the late start is done');
  t.equal(read(late), 'whole', 'as the late start reads its own');
  t.equal(published(cache), lateRoot, 'the late start published its copy');
});

/** The assets of an executable carrying `count` files (more files: a longer unpack and removal). */
function manyAssets(count: number): { assets: Record<string, string>; files: Record<string, string> } {
  const files: Record<string, string> = {};
  for (let i = 0; i < count; i++) files[`firmware-bindings/dialects/d${String(i).padStart(4, '0')}.json`] = `{"dialect":"d${i}","padding":"${'x'.repeat(512)}"}`;
  return { assets: { ...files, 'lintel-manifest.json': JSON.stringify({ digest: DIGEST, files: Object.keys(files) }) }, files };
}

/**
 * A child process that runs the banner as the executable does, once told to (`go`), then reads every
 * file it carries through the path the banner gave, `passes` times, and prints what it found; `read`
 * reads them all once more, `exit` ends it.
 */
const CHILD = `
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
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
function readAll(count) {
  const failures = [];
  let root = null;
  try {
    root = fileURLToPath(fileUrl('')).replace(/\\/$/, '');
    for (let pass = 0; pass < count; pass++) {
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
}
process.stdout.write('ready\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line === 'go') readAll(passes);
  else if (line === 'read') readAll(1);
  else process.exit(0);
});
`;

interface ChildRun {
  root: string | null;
  failures: string[];
}

interface BannerChild {
  pid: number;
  /** Sends `go` or `read` and answers what the child found. */
  ask(command: 'go' | 'read'): Promise<ChildRun>;
  /** Tells the child to end and waits for it. */
  end(): Promise<void>;
}

/** Starts a banner child over `cache`, once it is ready for `go`. */
async function startChild(t: Test, dir: string, cache: string, assets: Record<string, string>, passes: number): Promise<BannerChild> {
  const script = join(dir, 'child.mjs');
  const assetsFile = join(dir, 'assets.json');
  if (!existsSync(script)) writeFileSync(script, CHILD);
  writeFileSync(assetsFile, JSON.stringify(assets));
  const env: NodeJS.ProcessEnv = { ...process.env, CACHE_DIRECTORY: cache };
  // The test runner's hooks stay out of the children.
  delete env.NODE_OPTIONS;
  const banner = new URL('../../../edge/build/banner.mjs', import.meta.url).href;
  const child = spawn(process.execPath, [script, banner, assetsFile, String(passes)], { env, stdio: ['pipe', 'pipe', 'inherit'] });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const exited = new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) => resolve(code));
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async (): Promise<string> => {
    const line = await lines.next();
    if (line.done) throw new Error(`a banner child ended early (exit ${await exited})`);
    return line.value;
  };
  const ready = await next();
  if (ready !== 'ready') throw new Error(`a banner child said ${ready}`);
  return {
    pid: child.pid!,
    async ask(command) {
      child.stdin.write(`${command}\n`);
      return JSON.parse(await next()) as ChildRun;
    },
    async end() {
      child.stdin.end('exit\n');
      const code = await exited;
      if (code !== 0) throw new Error(`a banner child exited ${code}`);
    },
  };
}

/** Starts `count` children over `cache`, lets them all unpack at once, waits for their end, and answers what each found. */
async function runTogether(t: Test, dir: string, cache: string, assets: Record<string, string>, count: number, passes = 3): Promise<Array<ChildRun & { pid: number }>> {
  const children = await Promise.all(Array.from({ length: count }, () => startChild(t, dir, cache, assets, passes)));
  const runs = await Promise.all(children.map(async (child) => ({ pid: child.pid, ...(await child.ask('go')) })));
  await Promise.all(children.map((child) => child.end()));
  return runs;
}

t.test('commands starting together over a stale data directory: each reads a whole copy, and a later start leaves only the published one', async (t) => {
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
    const runs = await runTogether(t, dir, cache, assets, TOGETHER);
    t.ok(
      runs.every((r) => r.root !== null && COPY.test(basename(r.root))),
      `round ${round}: every command uses a copy unpacked whole (${runs.map((r) => r.root && basename(r.root)).join(', ')})`,
    );
    t.same(
      runs.flatMap((r) => r.failures),
      [],
      `round ${round}: every file read whole, by each, while the others unpacked`,
    );
    // Every command of the round has ended: the next start removes what they left.
    const [next] = await runTogether(t, dir, cache, assets, 1);
    const copy = published(cache);
    t.equal(next!.root, copy, `round ${round}: a later start uses the published copy`);
    t.same(readdirSync(cache).sort(), [DATA, basename(copy ?? '')], `round ${round}: and leaves no other copy`);
    t.ok(existsSync(join(cache, DATA, '.complete')), `round ${round}: the copy is marked whole`);
    t.same(readdirSync(join(cache, DATA, 'firmware-bindings/dialects')).length, 300, `round ${round}: with every file`);
  }
});

t.test('a copy a running process reads is kept after the symlink names another, until that process ends', async (t) => {
  const dir = t.testdir({});
  const cache = cacheDirectory(t);
  const [first] = await runTogether(t, dir, cache, ASSETS, 1);
  const copy = first!.root!;
  t.equal(published(cache), copy, 'a first command published its copy, and has ended');

  const reader = await startChild(t, dir, cache, ASSETS, 1);
  t.same(await reader.ask('go'), { root: copy, failures: [] }, 'a long-running process uses it');
  // tmpfiles ages the never-read marker away: the next start unpacks and publishes a copy of its own.
  unlinkSync(join(copy, '.complete'));
  const [second] = await runTogether(t, dir, cache, ASSETS, 1);
  t.not(second!.root, copy);
  t.equal(published(cache), second!.root, 'the symlink names the new copy');
  const [third] = await runTogether(t, dir, cache, ASSETS, 1);
  t.equal(third!.root, second!.root);
  t.ok(existsSync(copy), 'the copy the running process reads is still there: its unpacker has ended, the symlink names another, but it is marked as read');
  t.same(await reader.ask('read'), { root: copy, failures: [] }, 'and the process reads it whole');

  await reader.end();
  await runTogether(t, dir, cache, ASSETS, 1);
  t.notOk(existsSync(copy), 'once that process ended, a start removes it');
  t.same(readdirSync(cache).sort(), [DATA, basename(second!.root!)]);
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
  const [first] = await runTogether(t, dir, cache, ASSETS, 1);
  t.match(first!.root, new RegExp(`/${DATA}-${first!.pid}-[0-9a-f]{12}$`), 'that process used its own fresh copy');
  t.same(first!.failures, [], 'which holds every file');
  t.notOk(existsSync(join(stale, '.complete')), 'the stale directory is not taken for a whole one');
  t.ok(lstatSync(stale).isDirectory(), 'and stays where it is');

  // The stale directory can be removed again (tmpfiles, an operator); the process that used its fresh copy has ended.
  execFileSync('chattr', ['-i', stale]);
  immutable.length = 0;
  const [next] = await runTogether(t, dir, cache, ASSETS, 1);
  t.equal(next!.root, published(cache), 'the next start replaces the stale directory');
  t.same(next!.failures, []);
  t.same(readdirSync(cache).sort(), [DATA, basename(next!.root!)], 'and removes the copy the ended process left');
});

t.test('a cache directory others may write, or that cannot be made: refused with the code the command line ends with exit 2 on', async (t) => {
  const cache = cacheDirectory(t);
  chmodSync(cache, 0o777);
  t.throws(() => bannerInExecutable()(''), {
    code: 'LINTEL_ADDON_DIR_REFUSED',
    message: `refusing to unpack data into ${cache}: it must be a directory owned by this user and writable by no one else; unpack it elsewhere: set CACHE_DIRECTORY=/var/cache/lintel-edge (as the unit does; a directory this user owns, mode 700)`,
  });
  t.same(readdirSync(cache), [], 'nothing unpacked there');
  // A path through a file: the directory cannot be made.
  const file = join(t.testdir({ 'a-file': 'x' }), 'a-file');
  process.env.CACHE_DIRECTORY = join(file, 'cache');
  t.throws(() => bannerInExecutable()(''), { code: 'LINTEL_ADDON_DIR_REFUSED', message: new RegExp(`^cannot create ${file}/cache to unpack the executable's data into \\(ENOTDIR\\); unpack it elsewhere`) });
});
