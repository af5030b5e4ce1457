/**
 * `__dirname` for bundled dependencies that read their own files at run time.
 *
 * Some dependencies load data files by a path built from `__dirname` — @grpc/grpc-js
 * reads its channelz and ORCA `.proto` files when those are used. In the bundle `__dirname`
 * would be dist/ (or, in the single executable, the executable's directory) and the
 * files are not there. So build.mjs starts each such module with
 *
 *     var __dirname = require(".../package-files.ts").packageDir(
 *       "node_modules/@grpc/grpc-js/build/src", "../node_modules/@grpc/grpc-js/build/src");
 *
 * and embeds those packages' data files as assets under `files/node_modules/...`.
 *
 * - Bundled, not the executable (`node dist/sepp.cjs`): the module's real directory,
 *   relative to the bundle.
 * - The executable: on first call every `files/` asset is written to the process's
 *   private directory (private-dir.ts), mirroring node_modules, and the module's
 *   directory inside that mirror is returned.
 * Never called when run from source: nothing rewrites the modules then.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { PrivateDirError, privateRunDir } from './private-dir.ts';
import { readSeaAsset, runningAsSea, seaAssets } from './sea-assets.ts';

/** Prefix of the asset keys build.mjs embeds dependencies' data files under. */
export const packageFileKeyPrefix = 'files/';

let mirror: string | undefined;

/**
 * @param mirrorDir the module's directory from the first `node_modules/` on, as mirrored
 * @param fromBundleDir the module's real directory relative to the bundle's directory
 */
export function packageDir(mirrorDir: string, fromBundleDir: string): string {
  if (!runningAsSea()) {
    // `__filename` is the bundle: this is only ever called from bundled code.
    return resolve(
      dirname(typeof __filename === 'string' ? __filename : (process.argv[1] ?? '.')),
      fromBundleDir,
    );
  }
  if (mirror === undefined) {
    try {
      mirror = extractPackageFiles();
    } catch (error) {
      if (!(error instanceof PrivateDirError)) throw error;
      // No private directory (TMPDIR unusable). Most modules only build paths at load
      // and read the files later, if ever (grpc-js's channelz): give them a path where
      // nothing is, so `sepp --version` and the operator commands still work. `sepp
      // serve` needs the files, and checks the private directory first to say why not.
      return join(tmpdir(), 'sepp-files-unavailable', mirrorDir);
    }
  }
  const dir = join(mirror, mirrorDir);
  // Create it even if it holds no files: paths like `${__dirname}/../../proto` only
  // resolve through directories that exist.
  mkdirSync(dir, { recursive: true });
  return dir;
}

function extractPackageFiles(): string {
  const root = privateRunDir();
  for (const key of seaAssets().keys()) {
    if (!key.startsWith(packageFileKeyPrefix)) continue;
    const path = join(root, key.slice(packageFileKeyPrefix.length));
    // build.mjs never produces `..` in keys; a key that escapes would be a build bug.
    if (!path.startsWith(`${root}/`))
      throw new Error(`embedded file ${key} lies outside the private directory`);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, readSeaAsset(key) ?? Buffer.alloc(0), { mode: 0o400 });
  }
  return root;
}
