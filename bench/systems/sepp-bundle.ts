import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The production bundle the sepp drivers run (`node dist/sepp.cjs serve`), built with
 * `npm run build` when it is missing or older than its sources, so the benchmark never
 * measures a stale server.
 */

const root = fileURLToPath(new URL('../..', import.meta.url));

export const seppBundlePath = join(root, 'dist/sepp.cjs');

/** What the bundle is built from: a change to any of these makes it stale. */
const sources = ['src', 'clients/typescript/src', 'schema', 'proto', 'build.mjs', 'package.json'];

/** Newest modification time under `path`, in ms (0 when it does not exist). */
function newestMs(path: string): number {
  let stat: ReturnType<typeof statSync>;
  try {
    stat = statSync(path);
  } catch {
    return 0;
  }
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMs(join(path, entry)));
  return newest;
}

let checked = false;

/** Builds dist/sepp.cjs when missing or stale; once per harness run. */
export function ensureSeppBundle(log: (message: string) => void): void {
  if (checked) return;
  const bundleMs = newestMs(seppBundlePath);
  const sourceMs = Math.max(...sources.map((s) => newestMs(join(root, s))));
  if (bundleMs === 0) log('dist/sepp.cjs is missing; running npm run build');
  else if (bundleMs < sourceMs) log('dist/sepp.cjs is older than src/; running npm run build');
  if (bundleMs === 0 || bundleMs < sourceMs) {
    // The build's progress goes to stderr with the harness's own, keeping stdout for the tables.
    const build = spawnSync(process.execPath, [join(root, 'build.mjs')], {
      cwd: root,
      stdio: ['ignore', process.stderr, process.stderr],
    });
    if (build.status !== 0) throw new Error(`npm run build failed (exit ${build.status})`);
  }
  checked = true;
}
