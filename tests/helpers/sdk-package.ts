/**
 * The SDK package as a user gets it: packed with `npm pack` and installed with `npm install`
 * into a project outside the repository. For tests/client/examples.test.ts and
 * bench/sdk-package.ts.
 *
 * Offline: the SDK's dependencies are in npm's cache because the repository installs them,
 * but `npm ci` caches only their tarballs, not the registry's metadata that `npm install`
 * resolves version ranges with. So the project gets a package-lock.json that pins the
 * SDK's dependencies to the versions of the repository's own lockfile (what the registry
 * would have answered when the repository was locked), and npm runs with `--offline`.
 */
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
export const sdkDir = join(repoRoot, 'clients', 'typescript');

interface PackageJson {
  name: string;
  version: string;
  license?: string;
  dependencies?: Record<string, string>;
}

interface LockEntry {
  version?: string;
  dependencies?: Record<string, string>;
  dev?: boolean;
  devOptional?: boolean;
  peer?: boolean;
  [key: string]: unknown;
}

const readJson = <T>(path: string): T => JSON.parse(readFileSync(path, 'utf8')) as T;

export const sdkPackage = readJson<PackageJson>(join(sdkDir, 'package.json'));
/** What `npm pack` names the tarball: `@sepp-queue/client` 0.1.0 → sepp-queue-client-0.1.0.tgz. */
export const sdkTarballName = `${sdkPackage.name.replace(/^@/, '').replace('/', '-')}-${sdkPackage.version}.tgz`;

/**
 * Writes `appDir`/package-lock.json: the project's package.json as it is, and the SDK's
 * dependencies with everything they need, as the repository's lockfile has them.
 */
export function seedLockfile(appDir: string): number {
  const lock = readJson<{ packages: Record<string, LockEntry> }>(join(repoRoot, 'package-lock.json'));
  const app = readJson<PackageJson>(join(appDir, 'package.json'));
  // Node's lookup: from a package's folder up through each enclosing node_modules.
  const locate = (from: string, name: string): string | undefined => {
    for (let base = from; ; ) {
      const key = base === '' ? `node_modules/${name}` : `${base}/node_modules/${name}`;
      if (lock.packages[key] !== undefined) return key;
      if (base === '') return undefined;
      const up = base.lastIndexOf('/node_modules/');
      base = up < 0 ? '' : base.slice(0, up);
    }
  };
  const packages: Record<string, LockEntry> = {};
  const pending: Array<[from: string, name: string]> = Object.keys(sdkPackage.dependencies ?? {}).map((n) => [
    '',
    n,
  ]);
  for (let next = pending.shift(); next !== undefined; next = pending.shift()) {
    const [from, name] = next;
    const key = locate(from, name);
    if (key === undefined)
      throw new Error(`${name} (needed by ${from || 'the SDK'}) is not in package-lock.json`);
    if (packages[key] !== undefined) continue;
    // In the repository they may be development dependencies; in the project they are not.
    const { dev: _dev, devOptional: _devOptional, peer: _peer, ...entry } = lock.packages[key]!;
    packages[key] = entry;
    for (const dep of Object.keys(entry.dependencies ?? {})) pending.push([key, dep]);
  }
  const root = { name: app.name, version: app.version, ...(app.license ? { license: app.license } : {}) };
  const seeded = {
    name: app.name,
    version: app.version,
    lockfileVersion: 3,
    requires: true,
    packages: { '': root, ...packages },
  };
  writeFileSync(join(appDir, 'package-lock.json'), `${JSON.stringify(seeded, null, 2)}\n`);
  return Object.keys(packages).length;
}

/** Bytes of every file under `path` (0 when it does not exist). */
export function treeBytes(path: string): number {
  let stat: ReturnType<typeof statSync>;
  try {
    stat = statSync(path);
  } catch {
    return 0;
  }
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(path).reduce((n, name) => n + treeBytes(join(path, name)), 0);
}

/** Every package installed under `appDir`/node_modules, nested ones too (scoped as `@scope/name`), sorted. */
export function installedPackages(appDir: string): string[] {
  const found: string[] = [];
  const walk = (modules: string): void => {
    if (!existsSync(modules)) return;
    for (const name of readdirSync(modules)) {
      if (name.startsWith('.')) continue;
      const dirs = name.startsWith('@')
        ? readdirSync(join(modules, name)).map((m) => `${name}/${m}`)
        : [name];
      for (const dir of dirs) {
        found.push(dir);
        walk(join(modules, dir, 'node_modules'));
      }
    }
  };
  walk(join(appDir, 'node_modules'));
  return found.sort();
}

export const mib = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
