// Types for esbuild-package-files.mjs, so tests can import it under strict TypeScript.
import type { Plugin } from 'esbuild';

export interface PackageFiles {
  readonly plugin: Plugin;
  /** Asset key (`files/node_modules/…`) → absolute path of every data file of the packages seen. */
  dataFiles(): Map<string, string>;
  /** Mirrored paths (`node_modules/…`) of the packages whose modules were rewritten. */
  packages(): string[];
}

export function packageFilesPlugin(options: {
  helper: string;
  outDir: string;
  dataExtensions: readonly string[];
}): PackageFiles;
export function mirrorPath(path: string): string;
export function directivePrologueEnd(text: string): number;
