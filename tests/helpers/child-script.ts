/**
 * How a test starts one of its child scripts (a .ts file it runs as a process, again and
 * again in the crash tests): `node` with a bundle of the script, made by esbuild once per
 * test process. Its relative imports (src/, tests/helpers/) are in the bundle; packages
 * stay imports, found in the repository's node_modules (the bundle is under dist/, which
 * git and Biome ignore). The same code starts in a quarter of the CPU it takes under tsx
 * (tests/engine/crash-child.ts: 150 against 660 ms of CPU when it says ready, 2026-12-06).
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { basename, join } from 'node:path';
import { buildSync } from 'esbuild';
import { startsProcess } from './test-run.ts';

const root = new URL('../..', import.meta.url).pathname;
const bundles = new Map<string, string>();
let outDir: string | undefined;

/** The arguments of `node` (process.execPath) that run `script`, an absolute path. */
export function childScriptArgs(script: string): string[] {
  startsProcess(`a child process (${basename(script)})`);
  let bundle = bundles.get(script);
  if (bundle === undefined) {
    if (outDir === undefined) {
      mkdirSync(join(root, 'dist'), { recursive: true });
      const dir = mkdtempSync(join(root, 'dist', 'test-children-'));
      process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
      outDir = dir;
    }
    bundle = join(outDir, `${basename(script, '.ts')}.mjs`);
    buildSync({
      entryPoints: [script],
      outfile: bundle,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      packages: 'external',
      logLevel: 'error',
    });
    bundles.set(script, bundle);
  }
  return [bundle];
}
