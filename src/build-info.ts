/**
 * What this program is: its version and the git commit it was built from.
 *
 * `build.mjs` replaces `__SEPP_VERSION__`, `__SEPP_COMMIT__` and `__SEPP_BUNDLED__` with
 * string and boolean literals through esbuild's `define`. Run from source (tsx) they
 * are not declared at all, so every read is guarded by `typeof`: the version then comes
 * from package.json and the commit is `dev`.
 *
 * This module sits below every layer (scripts/check-layers.mjs): anything may import
 * it, and it imports nothing from src/.
 */
import pkg from '../package.json' with { type: 'json' };

declare const __SEPP_VERSION__: string;
declare const __SEPP_COMMIT__: string;
declare const __SEPP_BUNDLED__: boolean;

export interface BuildInfo {
  /** The package version, e.g. `0.1.0`. */
  readonly version: string;
  /** Short git hash, `-dirty` appended when the tree had uncommitted changes; `dev` from source. */
  readonly commit: string;
  /** True in `dist/sepp.cjs` and the single executable, false when run from source. */
  readonly bundled: boolean;
}

export const buildInfo: BuildInfo = Object.freeze({
  version: typeof __SEPP_VERSION__ === 'string' ? __SEPP_VERSION__ : pkg.version,
  commit: typeof __SEPP_COMMIT__ === 'string' ? __SEPP_COMMIT__ : 'dev',
  bundled: typeof __SEPP_BUNDLED__ === 'boolean' ? __SEPP_BUNDLED__ : false,
});

export const { version, commit } = buildInfo;
