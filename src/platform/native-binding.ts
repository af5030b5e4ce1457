/**
 * Where better-sqlite3 finds its native addon (`better_sqlite3.node`).
 *
 * - From source (tsx): undefined, and better-sqlite3 finds the addon in node_modules
 *   itself (through the `bindings` package).
 * - `node dist/sepp.cjs`: the bundle moved better-sqlite3's JavaScript away from its
 *   package, so `bindings` would search next to dist/ and fail; resolve the addon from
 *   node_modules instead.
 * - The single executable: the addon is an embedded asset. A shared library can only be
 *   loaded from a file, so it is written (mode 0500) into the process's private
 *   directory (private-dir.ts: 0700, removed on exit) and loaded at once.
 *
 * Pass the result as better-sqlite3's `nativeBinding` option; `undefined` means "the
 * default".
 */
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { buildInfo } from '../build-info.ts';
import { privateRunDir } from './private-dir.ts';
import { readSeaAsset, runningAsSea } from './sea-assets.ts';

/** The asset key build.mjs embeds the addon under. */
export const nativeAddonAssetKey = 'native/better_sqlite3.node';

const addonFileName = 'better_sqlite3.node';

let resolved: { path: string | undefined } | undefined;

/** The addon file for better-sqlite3's `nativeBinding` option; extracts it on first call in the executable. */
export function nativeBindingPath(): string | undefined {
  resolved ??= { path: locate() };
  return resolved.path;
}

function locate(): string | undefined {
  if (runningAsSea()) return extractAddon();
  if (buildInfo.bundled) return resolveFromNodeModules();
  return undefined;
}

function resolveFromNodeModules(): string {
  // `__filename` is the bundle itself (this branch only runs bundled, as CommonJS), so
  // resolution walks up from dist/ to the package's node_modules.
  const require = createRequire(typeof __filename === 'string' ? __filename : join(process.cwd(), 'x.js'));
  const pkgJson = require.resolve('better-sqlite3/package.json');
  return join(pkgJson, '..', 'build', 'Release', addonFileName);
}

function extractAddon(): string {
  const data = readSeaAsset(nativeAddonAssetKey);
  if (data === undefined) {
    throw new Error(
      `this executable carries no ${nativeAddonAssetKey}: it was built incorrectly, rebuild it`,
    );
  }
  const dir = privateRunDir();
  const file = join(dir, addonFileName);
  writeFileSync(file, data, { mode: 0o500, flag: 'wx' });
  preload(file, dir);
  return file;
}

/**
 * Loads the addon now, so a failure names its cause here rather than surfacing later as
 * a puzzling error from inside better-sqlite3. Node caches the module by file name, so
 * better-sqlite3's own `require` of the same path gets this instance.
 */
function preload(file: string, dir: string): void {
  try {
    createRequire(process.execPath)(file);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(
      `could not load the embedded SQLite addon from ${dir}: ${reason}. ` +
        'If that file system is mounted noexec, point TMPDIR at a directory that allows executables.',
    );
  }
}
