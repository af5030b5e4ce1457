/**
 * Read-only access to the files build.mjs embeds in the single executable (SEA assets).
 *
 * It lives in platform/, the bottom floor (packaging, not storage): the native SQLite
 * addon and the UI files are both read through it, and it knows nothing about either use.
 *
 * Node 20 can fetch an asset by key but cannot list keys (`sea.getAssetKeys()` arrived in
 * Node 22), so the build also embeds a manifest under `manifestAssetKey` listing every
 * other asset with its size and sha256 (usable as an HTTP ETag without hashing at run
 * time). Outside the single executable (tsx, `node dist/sepp.cjs`) there are no assets:
 * the manifest is empty and every read returns undefined, so callers fall back to disk.
 */
import { createHash } from 'node:crypto';
import { getAsset, isSea } from 'node:sea';

/** The key of the manifest itself; build.mjs writes the same name. */
export const manifestAssetKey = 'sepp-assets.json';

export interface SeaAsset {
  /**
   * The key to read it with: `native/better_sqlite3.node`, `ui/<path under ui/dist>`, or
   * `files/node_modules/<package>/<path>` (package-files.ts).
   */
  readonly key: string;
  readonly sizeBytes: number;
  /** Lower-case hex SHA-256 of the content. */
  readonly sha256: string;
}

export interface SeaAssetManifest {
  readonly assets: readonly SeaAsset[];
}

/** True when this process is the single executable. */
export function runningAsSea(): boolean {
  return isSea();
}

let manifest: ReadonlyMap<string, SeaAsset> | undefined;

/** Every embedded asset by key; empty when not running as the single executable. */
export function seaAssets(): ReadonlyMap<string, SeaAsset> {
  manifest ??= loadManifest();
  return manifest;
}

/**
 * The content of one embedded asset, or undefined when it is not in the manifest (or
 * this is not the single executable). The Buffer wraps a fresh copy: callers may keep it.
 */
export function readSeaAsset(key: string): Buffer | undefined {
  const entry = seaAssets().get(key);
  if (entry === undefined) return undefined;
  const data = Buffer.from(getAsset(key));
  // A size mismatch means the manifest and the blob come from different builds: a broken
  // executable, not an operating error, so fail loudly.
  if (data.byteLength !== entry.sizeBytes) {
    throw new Error(
      `embedded asset ${key} is ${data.byteLength} bytes but the manifest says ${entry.sizeBytes}: ` +
        'this executable is corrupt, rebuild it with `npm run build`',
    );
  }
  return data;
}

/**
 * Reads every embedded asset and checks its sha256 against the manifest (`sepp
 * selftest`). Throws on the first mismatch; returns what it checked.
 */
export function verifySeaAssets(): { count: number; sizeBytes: number } {
  let sizeBytes = 0;
  for (const asset of seaAssets().values()) {
    const data = readSeaAsset(asset.key);
    const sha256 = data === undefined ? 'missing' : createHash('sha256').update(data).digest('hex');
    if (sha256 !== asset.sha256) {
      throw new Error(`embedded asset ${asset.key} has sha256 ${sha256}, the manifest says ${asset.sha256}`);
    }
    sizeBytes += asset.sizeBytes;
  }
  return { count: seaAssets().size, sizeBytes };
}

function loadManifest(): ReadonlyMap<string, SeaAsset> {
  if (!isSea()) return new Map();
  const parsed: unknown = JSON.parse(getAsset(manifestAssetKey, 'utf8'));
  if (!isManifest(parsed)) {
    throw new Error(`embedded ${manifestAssetKey} is malformed: this executable is corrupt, rebuild it`);
  }
  return new Map(parsed.assets.map((asset) => [asset.key, asset]));
}

function isManifest(value: unknown): value is SeaAssetManifest {
  if (typeof value !== 'object' || value === null || !('assets' in value)) return false;
  const { assets } = value;
  return Array.isArray(assets) && assets.every(isAsset);
}

function isAsset(value: unknown): value is SeaAsset {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.key === 'string' && typeof v.sizeBytes === 'number' && typeof v.sha256 === 'string';
}
