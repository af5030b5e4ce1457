// A V8 code cache for the run's bundle (scripts/run-tests.mjs): every `sepp` a test
// starts compiles the 5 MB sepp.cjs again, about a fifth of a CLI command's CPU. The
// loader written here compiles the bundle with vm.Script and the cache beside it
// (`cachedData`), and runs it as node would run sepp.cjs (same __filename, require and
// module paths, so the bundle finds node_modules and its files as before). The first
// process that finds no cache, or one V8 rejects, writes it when it exits (to a temporary
// file, then renamed: processes of the run start in parallel); the run warms it with one
// client command. The bundle is built fresh in a directory of its own per run and V8
// checks the source against the cache, so a cache never outlives its bundle.
//
// The single executable needs none of this: sea-config.json's useCodeCache embeds one.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const loader = `'use strict';
// Written by scripts/code-cache.mjs: runs sepp.cjs with a V8 code cache.
const { Script } = require('node:vm');
const fs = require('node:fs');
const path = require('node:path');
const Module = require('node:module');
const file = path.join(__dirname, 'sepp.cjs');
const cacheFile = file + '.v8-cache';
let cachedData;
try {
  cachedData = fs.readFileSync(cacheFile);
} catch {}
// The shebang goes; the line stays, so line numbers in stack traces are the bundle's.
const source = fs.readFileSync(file, 'utf8').replace(/^#!.*/, '');
const script = new Script(Module.wrap(source), { filename: file, cachedData });
const mod = new Module(file, null);
mod.filename = file;
mod.paths = Module._nodeModulePaths(__dirname);
require.main = mod;
process.mainModule = mod;
if (cachedData === undefined || script.cachedDataRejected) {
  process.on('exit', () => {
    const temporary = cacheFile + '.' + process.pid;
    try {
      fs.writeFileSync(temporary, script.createCachedData());
      fs.renameSync(temporary, cacheFile);
    } catch {}
  });
}
script.runInThisContext()(mod.exports, Module.createRequire(file), mod, file, __dirname);
`;

/**
 * Writes `sepp-cached.cjs` beside `bundleDir/sepp.cjs`, warms its cache with a client
 * command that compiles the CLI and the gRPC client (against a port nothing listens on:
 * it fails, which is all it needs to do), and returns the loader's path.
 */
export function writeCodeCacheLoader(bundleDir, cwd) {
  const path = join(bundleDir, 'sepp-cached.cjs');
  writeFileSync(path, loader);
  spawnSync(process.execPath, [path, 'queues', '--server', '127.0.0.1:9'], {
    cwd,
    env: { ...process.env, SEPP_API_KEY: '', SEPP_CONFIG: '' },
    stdio: 'ignore',
    timeout: 30_000,
  });
  return path;
}
