#!/usr/bin/env node
// Builds sepp into one executable (`npm run build`):
//   1. esbuild bundles src/cli/main.ts and everything it imports into dist/sepp.cjs
//      (CommonJS, because a Node 20 single executable runs exactly one CommonJS script);
//   2. the SEA assets are collected — the better-sqlite3 addon, ui/dist/** when it exists,
//      the .proto files dependencies read by __dirname (scripts/esbuild-package-files.mjs)
//      — and described in a manifest, since Node 20 cannot list embedded assets;
//   3. `node --experimental-sea-config` turns the bundle and the assets into a blob, and
//      postject injects the blob into a copy of this machine's node binary: dist/sepp.
//
// sea-config.json (committed) holds the fixed part of the SEA configuration; the effective
// one, with every asset and absolute paths, is written next to the outputs. Its code cache
// (useCodeCache) is V8's for the flags of this build: a V8 flag in a user's NODE_OPTIONS
// makes the executable compile the bundle as it starts, and Node prints "Code cache data
// rejected." before our code runs, so sepp cannot hold it back; Node 20 cannot make an
// executable ignore NODE_OPTIONS (docs/operations.md, "Node.js options").
//
// Usage: node build.mjs [--out-dir DIR] [--no-strip] [--bundle-only]
//   --out-dir   where the outputs go (default dist/; the smoke test builds elsewhere)
//   --bundle-only  stop after step 1: just sepp.cjs, run with `node sepp.cjs` (a second
//               or two; tests that start and kill the server many times use it, since the
//               bundle starts several times faster than the sources under tsx)
//   --no-strip  keep node's symbol table and debug info (12 MiB) in the executable; by
//               default they are stripped when binutils' `strip` is installed, which only
//               costs symbol names in native (C++) backtraces.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import { packageFilesPlugin } from './scripts/esbuild-package-files.mjs';

const root = fileURLToPath(new URL('.', import.meta.url));
const { values: flags } = parseArgs({
  options: {
    'out-dir': { type: 'string', default: join(root, 'dist') },
    'no-strip': { type: 'boolean', default: false },
    'bundle-only': { type: 'boolean', default: false },
  },
});
const outDir = resolve(flags['out-dir']);
const started = performance.now();

const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const baseConfig = JSON.parse(readFileSync(join(root, 'sea-config.json'), 'utf8'));
const commit = gitCommit();
const nativeAddon = join(root, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node');
const uiDist = join(root, 'ui/dist');
const bundlePath = join(outDir, 'sepp.cjs');
const blobPath = join(outDir, 'sepp.blob');
const manifestPath = join(outDir, 'sepp-assets.json');
const seaConfigPath = join(outDir, 'sea-config.json');
const exePath = join(outDir, 'sepp');

mkdirSync(outDir, { recursive: true });
// The executable is a copy of the node running this script, and npm ci built the addon
// for it; the product targets Node 20 (SPEC §2), so say so when that is not what runs.
if (process.versions.node.split('.')[0] !== '20') {
  console.warn(`warning: building with node ${process.version}; sepp targets Node 20`);
}
log(
  `building sepp ${pkg.version} (${commit}) with node ${process.version} into ${relative(root, outDir) || '.'}`,
);

// 0. The admin UI, so the executable carries current files (a no-op when ui/dist is fresh).
// A bare bundle embeds nothing; run from the repository it serves ui/dist from disk.
if (!flags['bundle-only'])
  await step('admin UI', async () => {
    const ui = spawnSync(process.execPath, [join(root, 'scripts/build-ui.mjs'), '--if-stale'], {
      encoding: 'utf8',
    });
    if (ui.status !== 0) throw new Error(`the admin UI build failed:\n${ui.stdout}${ui.stderr}`);
    return existsSync(uiDist) ? 'ui/dist' : 'none';
  });

// 1. Bundle.
const packageFiles = packageFilesPlugin({
  helper: join(root, 'src/platform/package-files.ts'),
  outDir,
  // What dependencies read by __dirname today: .proto files. Add an extension here when a
  // dependency needs another kind (the smoke test of the executable shows it).
  dataExtensions: ['.proto'],
});
await step('bundle', async () => {
  const { metafile } = await build({
    metafile: true,
    entryPoints: [join(root, 'src/cli/main.ts')],
    // Paths in the bundle's comments are relative to this, whatever the caller's cwd.
    absWorkingDir: root,
    outfile: bundlePath,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    // A single executable's script cannot use import() (Node 20 has no dynamic-import
    // callback for it), and the OTLP exporters load node:http that way: have esbuild
    // turn every import() into require().
    supported: { 'dynamic-import': false },
    // better-sqlite3's JavaScript is bundled; its addon is loaded at run time from the
    // path src/platform/native-binding.ts gives, so nothing may require a .node file here.
    define: {
      __SEPP_VERSION__: JSON.stringify(pkg.version),
      __SEPP_COMMIT__: JSON.stringify(commit),
      __SEPP_BUNDLED__: 'true',
      // ESM-only dependencies (yargs 18 and yargs-parser call createRequire(import.meta.url))
      // lose import.meta in a CommonJS bundle, silently: esbuild does not warn about it
      // inside node_modules. Give them the bundle's own location, set by the banner.
      // (src/ itself never uses import.meta: run from source it means something else.)
      'import.meta.url': '__sepp_import_meta_url',
      'import.meta.filename': '__filename',
      'import.meta.dirname': '__dirname',
    },
    banner: { js: banner() },
    plugins: [packageFiles.plugin],
    legalComments: 'eof',
    logLevel: 'warning',
  });
  // With useCodeCache, Node 20 cannot run import() in the executable. esbuild turns
  // import() of bundled modules into plain calls; one left pointing outside would fail.
  const dynamic = Object.values(metafile.outputs).flatMap((o) =>
    o.imports.filter((i) => i.kind === 'dynamic-import' && i.external).map((i) => i.path),
  );
  if (baseConfig.useCodeCache && dynamic.length > 0) {
    fail(`import() of ${dynamic.join(', ')} stays in the bundle; it cannot run with useCodeCache`);
  }
  return size(bundlePath);
});

if (flags['bundle-only']) {
  log(`done in ${seconds(performance.now() - started)}: ${relative(root, bundlePath) || bundlePath}`);
  process.exit(0);
}

// 2. Assets and their manifest.
const manifestKey = 'sepp-assets.json'; // src/platform/sea-assets.ts reads it under this key
const { [manifestKey]: _manifest, ...assets } = baseConfig.assets;
if (existsSync(uiDist)) {
  for (const file of listFiles(uiDist)) assets[`ui/${relative(uiDist, file)}`] = file;
}
for (const [key, file] of packageFiles.dataFiles()) assets[key] = file;
for (const [key, file] of Object.entries(assets)) {
  const path = resolve(root, file);
  if (!existsSync(path)) fail(`asset ${key}: ${path} does not exist (run npm ci?)`);
  assets[key] = path;
}
if (assets['native/better_sqlite3.node'] !== nativeAddon) {
  fail(
    'sea-config.json must embed node_modules/better-sqlite3/build/Release/better_sqlite3.node as native/better_sqlite3.node',
  );
}
await step('asset manifest', () => {
  const entries = Object.entries(assets)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, path]) => {
      const data = readFileSync(path);
      return { key, sizeBytes: data.byteLength, sha256: createHash('sha256').update(data).digest('hex') };
    });
  writeFileSync(manifestPath, `${JSON.stringify({ assets: entries }, null, 2)}\n`);
  const count = (prefix) => entries.filter((e) => e.key.startsWith(prefix)).length;
  const ui = existsSync(uiDist) ? `${count('ui/')} UI files` : 'no ui/dist yet';
  const pkgs = packageFiles.packages().map((p) => p.replace(/^node_modules\//, ''));
  const files = `${count('files/')} files of ${pkgs.length ? pkgs.join(', ') : 'no package'} read by __dirname`;
  const total = humanSize(entries.reduce((n, e) => n + e.sizeBytes, 0));
  return `${entries.length} assets (${ui}; ${files}), ${total}`;
});

// 3. The single executable.
const seaConfig = {
  ...baseConfig,
  // Node records this path as the script's file name (it shows in stack traces); relative
  // to the repository it does not leak the build machine's directories.
  main: relative(root, bundlePath),
  output: blobPath,
  assets: { ...assets, [manifestKey]: manifestPath },
};
writeFileSync(seaConfigPath, `${JSON.stringify(seaConfig, null, 2)}\n`);
await step('SEA blob', () => {
  run(process.execPath, ['--experimental-sea-config', seaConfigPath]);
  return size(blobPath);
});
await step('inject', () => {
  rmSync(exePath, { force: true });
  const stripped = !flags['no-strip'] && hasCommand('strip');
  // Strip before injecting: the blob lives in an ELF note that postject adds.
  if (stripped) run('strip', ['--strip-all', '-o', exePath, process.execPath]);
  else copyFileSync(process.execPath, exePath);
  chmodSync(exePath, 0o755);
  const postject = join(root, 'node_modules/postject/dist/cli.js');
  run(process.execPath, [
    postject,
    exePath,
    'NODE_SEA_BLOB',
    blobPath,
    '--sentinel-fuse',
    'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2',
  ]);
  return `${size(exePath)}${stripped ? ', node stripped' : ', node not stripped'}`;
});
// Run it: the version proves the build info, the self-test that the embedded addon
// loads (it would not if node_modules was installed for another Node ABI).
await step('check', () => {
  const version = execFileSync(exePath, ['--version'], { encoding: 'utf8' }).trim();
  const expected = `sepp ${pkg.version} (${commit})`;
  if (version !== expected) fail(`${exePath} --version printed "${version}", expected "${expected}"`);
  const selftest = spawnSync(exePath, ['selftest'], { encoding: 'utf8' });
  if (selftest.status !== 0) fail(`${exePath} selftest failed:\n${selftest.stdout}${selftest.stderr}`);
  return `${version}; selftest OK`;
});
log(`done in ${seconds(performance.now() - started)}: ${relative(root, exePath) || exePath}`);

/** Runs first in the bundle. */
function banner() {
  return [
    // Inside a single executable the main script's `require` loads only built-in modules,
    // and better-sqlite3 requires its addon by path: swap in a real require.
    "if (require('node:sea').isSea()) require = require('node:module').createRequire(__filename);",
    "var __sepp_import_meta_url = require('node:url').pathToFileURL(__filename).href;",
  ].join('\n');
}

/** Short hash of HEAD, `-dirty` when tracked or untracked files differ from it; `unknown` outside git. */
function gitCommit() {
  try {
    const git = (...args) =>
      execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const hash = git('rev-parse', '--short=12', 'HEAD');
    return git('status', '--porcelain') === '' ? hash : `${hash}-dirty`;
  } catch {
    return 'unknown';
  }
}

async function step(name, fn) {
  const t0 = performance.now();
  const detail = await fn();
  log(`  ${name.padEnd(15)} ${seconds(performance.now() - t0).padStart(6)}  ${detail}`);
}

function run(cmd, args) {
  // postject prints an ELF warning per note section; show output only when it fails.
  const result = spawnSync(cmd, args, { cwd: root, encoding: 'utf8' });
  if (result.status !== 0) fail(`${[cmd, ...args].join(' ')} failed:\n${result.stdout}${result.stderr}`);
}

function hasCommand(name) {
  return spawnSync(name, ['--version'], { stdio: 'ignore' }).status === 0;
}

function listFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    return e.isDirectory() ? listFiles(path) : e.isFile() ? [path] : [];
  });
}

function size(path) {
  return humanSize(statSync(path).size);
}
function humanSize(bytes) {
  return bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(0)} KiB` : `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
function seconds(ms) {
  return `${(ms / 1000).toFixed(1)} s`;
}
function log(line) {
  console.log(line);
}
function fail(message) {
  console.error(`build failed: ${message}`);
  process.exit(1);
}
