/**
 * Builds dist/lintel-edge: one Linux x64 executable, offline, from the local Node (single executable
 * application). Steps:
 *   1. esbuild bundles edge/src/cli.ts and everything it imports into one CommonJS file. `import.meta.url`
 *      (used to find data files beside the code) is rewritten to a path inside the data the executable
 *      carries, which the banner (banner.mjs) unpacks at start; ssh2's optional native modules are left out
 *      (it falls back to JavaScript).
 *   2. Node writes the SEA blob with the bundle and the assets: better-sqlite3's addon, the AP dialects and
 *      device bindings, and the SQL migrations.
 *   3. postject injects the blob into a copy of the local node binary.
 * Before step 1, better-sqlite3's addon is loaded into this Node, which the executable is a copy of: an addon
 * built for another Node stops the build (npm rebuild better-sqlite3) instead of making an executable that
 * cannot open its state.
 * `--if-stale` skips the build when dist/lintel-edge was built from the same inputs.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import postject from 'postject';
import { BANNER } from './banner.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const DIST = join(ROOT, 'dist');
const WORK = join(DIST, '.sea');
const OUTPUT = join(DIST, 'lintel-edge');
const BUNDLE = join(WORK, 'lintel-edge.cjs');
const BLOB = join(WORK, 'sea-prep.blob');
const STAMP = join(WORK, 'inputs.sha256');
const SQLITE_ADDON = join(ROOT, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node');
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

const log = (line) => process.stderr.write(`build-edge: ${line}\n`);

function filesUnder(dir, keep) {
  if (!existsSync(dir)) return [];
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(path, keep));
    else if (keep(path)) out.push(path);
  }
  return out.sort();
}

const rel = (path) => relative(ROOT, path).split(sep).join('/');

/** The data files code finds through import.meta.url, carried as assets under their repository path. */
function dataFiles() {
  return [
    ...filesUnder(join(ROOT, 'firmware-bindings'), (p) => p.endsWith('.json')),
    ...filesUnder(join(ROOT, 'edge/src'), (p) => p.endsWith('.sql')),
    ...filesUnder(join(ROOT, 'shared'), (p) => p.endsWith('.sql') || p.endsWith('.json')),
  ];
}

/** A digest of everything the executable is made of, to tell whether a build is up to date. */
function inputsDigest() {
  const hash = createHash('sha256');
  const node = statSync(process.execPath);
  hash.update(`${process.version} ${process.execPath} ${node.size} ${node.mtimeMs}`);
  const inputs = [
    ...filesUnder(join(ROOT, 'edge/src'), () => true),
    ...filesUnder(join(ROOT, 'edge/build'), () => true),
    ...filesUnder(join(ROOT, 'shared'), () => true),
    ...filesUnder(join(ROOT, 'firmware-bindings'), () => true),
    join(ROOT, 'package.json'),
    join(ROOT, 'package-lock.json'),
    join(ROOT, 'tools/build-edge'),
    SQLITE_ADDON,
  ];
  for (const file of inputs) {
    if (!existsSync(file)) continue;
    hash.update(rel(file));
    hash.update(readFileSync(file));
  }
  return hash.digest('hex');
}

/** esbuild plugin: `import.meta.url` in our own modules becomes the file's place in the carried data. */
const importMetaUrl = {
  name: 'import-meta-url',
  setup(b) {
    b.onLoad({ filter: /\.(ts|mjs|js)$/ }, (args) => {
      if (args.path.includes(`${sep}node_modules${sep}`)) return undefined;
      const source = readFileSync(args.path, 'utf8');
      if (!source.includes('import.meta.url')) return undefined;
      const contents = source.replaceAll('import.meta.url', `__lintelFileUrl(${JSON.stringify(rel(args.path))})`);
      return { contents, loader: args.path.endsWith('.ts') ? 'ts' : 'js' };
    });
  },
};

/**
 * esbuild plugin: optional native modules (ssh2's crypto binding, cpu-features) are replaced by a module
 * that throws, as a missing optional dependency would; their users catch it and fall back to JavaScript.
 */
const optionalNatives = {
  name: 'optional-natives',
  setup(b) {
    b.onResolve({ filter: /(\.node$|^cpu-features$)/ }, (args) => ({ path: args.path, namespace: 'optional-native' }));
    b.onLoad({ filter: /.*/, namespace: 'optional-native' }, (args) => ({
      contents: `throw Object.assign(new Error(${JSON.stringify(`optional native module ${args.path} is not part of the executable`)}), { code: 'MODULE_NOT_FOUND' });`,
      loader: 'js',
    }));
  },
};

/**
 * The addon is carried into a copy of this very Node, so it must load here: one built for another Node
 * (node_modules kept across a Node upgrade) would be injected all the same, and every start of the
 * executable would then fail on it. Loading it into this process is the same check the executable's
 * loader makes (process.dlopen), before anything is bundled.
 */
function checkAddonLoads() {
  try {
    process.dlopen({ exports: {} }, SQLITE_ADDON);
  } catch (err) {
    const why = err.message.replace(/\s+/g, ' ').trim();
    throw new Error(`better-sqlite3's addon (${rel(SQLITE_ADDON)}) does not load into this Node ${process.version} (NODE_MODULE_VERSION ${process.versions.modules}): ${why}; run npm rebuild better-sqlite3, then build again`);
  }
}

async function main() {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(`the edge executable is built for Linux x64; this is ${process.platform}-${process.arch}`);
  }
  const [major, minor] = process.versions.node.split('.').map(Number);
  if (major < 20 || (major === 20 && minor < 12)) throw new Error(`Node ${process.version} cannot carry SEA assets; use Node 20.12 or later`);
  if (!existsSync(SQLITE_ADDON)) throw new Error(`better-sqlite3's addon is missing (${rel(SQLITE_ADDON)}); run npm ci`);
  checkAddonLoads();
  if (!readFileSync(process.execPath).includes(SEA_FUSE)) throw new Error(`${process.execPath} has no single-executable fuse; it cannot be used as a base`);

  const digest = inputsDigest();
  if (process.argv.includes('--if-stale') && existsSync(OUTPUT) && existsSync(STAMP) && readFileSync(STAMP, 'utf8') === digest) {
    log(`${rel(OUTPUT)} is up to date`);
    return;
  }
  rmSync(WORK, { recursive: true, force: true });
  mkdirSync(WORK, { recursive: true });

  log('bundling edge/src/cli.ts');
  await build({
    entryPoints: [join(ROOT, 'edge/src/cli.ts')],
    bundle: true,
    platform: 'node',
    target: `node${process.versions.node.split('.')[0]}`,
    format: 'cjs',
    outfile: BUNDLE,
    banner: { js: BANNER },
    plugins: [importMetaUrl, optionalNatives],
    logLevel: 'warning',
    legalComments: 'none',
    sourcemap: false,
    // Whitespace and syntax only: names stay, so stack traces still name their functions. The source is
    // a third smaller, and so is what V8 keeps of it: about 4 MB less RSS for the collector.
    minifyWhitespace: true,
    minifySyntax: true,
  });

  const files = dataFiles();
  const manifest = { digest, files: files.map(rel) };
  writeFileSync(join(WORK, 'lintel-manifest.json'), JSON.stringify(manifest));
  const assets = { 'better_sqlite3.node': SQLITE_ADDON, 'lintel-manifest.json': join(WORK, 'lintel-manifest.json') };
  for (const file of files) assets[rel(file)] = file;
  const seaConfig = join(WORK, 'sea-config.json');
  writeFileSync(
    seaConfig,
    JSON.stringify({ main: BUNDLE, output: BLOB, disableExperimentalSEAWarning: true, useSnapshot: false, useCodeCache: false, assets }, null, 2),
  );
  log(`writing the SEA blob (${files.length} data files and the SQLite addon as assets)`);
  execFileSync(process.execPath, ['--experimental-sea-config', seaConfig], { stdio: ['ignore', 'ignore', 'inherit'] });

  log(`injecting into a copy of ${process.execPath} (${process.version})`);
  const partial = `${OUTPUT}.partial`;
  rmSync(partial, { force: true });
  copyFileSync(process.execPath, partial);
  chmodSync(partial, 0o755);
  await postject.inject(partial, 'NODE_SEA_BLOB', readFileSync(BLOB), { sentinelFuse: SEA_FUSE });
  renameSync(partial, OUTPUT);
  writeFileSync(STAMP, digest);
  log(`built ${rel(OUTPUT)} (${(statSync(OUTPUT).size / 1e6).toFixed(1)} MB)`);
}

main().catch((err) => {
  log(`failed: ${err.message}`);
  process.exit(1);
});
