// esbuild plugin for build.mjs: keeps dependencies that read their own files by
// `__dirname` working in the bundle and in the single executable.
//
// Some dependencies (parts of @grpc/grpc-js; grpc-health-check, which the server no longer
// imports: src/rpc/health.ts) load `.proto` files from `${__dirname}/../../proto` at run time. Bundled, `__dirname` is the bundle's
// directory and the files are not there. This plugin starts every such module in
// node_modules with `var __dirname = …packageDir(…)` (src/platform/package-files.ts decides
// where that is at run time) and lists the data files of their packages, which build.mjs
// embeds under `files/node_modules/…`.
import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, extname, join, relative, sep } from 'node:path';

/**
 * @param {{ helper: string, outDir: string, dataExtensions: readonly string[] }} options
 *   helper: absolute path of src/platform/package-files.ts; outDir: where the bundle goes;
 *   dataExtensions: which files of those packages to embed (only what they read).
 */
export function packageFilesPlugin({ helper, outDir, dataExtensions }) {
  /** Package roots (real paths) whose modules use __dirname or __filename. */
  const packages = new Set();
  const plugin = {
    name: 'sepp-package-files',
    setup(build) {
      build.onLoad({ filter: /[\\/]node_modules[\\/].*\.c?js$/ }, (args) => {
        const text = readFileSync(args.path, 'utf8');
        const usesDirname = /\b__dirname\b/.test(text);
        const usesFilename = /\b__filename\b/.test(text);
        if (!usesDirname && !usesFilename) return undefined; // esbuild loads it as usual
        packages.add(packageRoot(args.path));
        const dir = dirname(args.path);
        const call = `require(${JSON.stringify(helper)}).packageDir(${JSON.stringify(mirrorPath(dir))}, ${JSON.stringify(relative(outDir, dir))})`;
        let prelude = `var __dirname = ${call};`;
        if (usesFilename)
          prelude += ` var __filename = require("node:path").join(__dirname, ${JSON.stringify(basename(args.path))});`;
        // After the directive prologue, so a "use strict" module stays strict.
        const at = directivePrologueEnd(text);
        return {
          contents: `${text.slice(0, at)}${prelude}\n${text.slice(at)}`,
          loader: 'js',
          resolveDir: dir,
        };
      });
    },
  };
  /** Asset key → absolute path of every data file of the packages seen. */
  function dataFiles() {
    const files = new Map();
    for (const root of [...packages].sort()) {
      for (const file of walk(root)) {
        if (dataExtensions.includes(extname(file))) files.set(`files/${mirrorPath(file)}`, file);
      }
    }
    return files;
  }
  return { plugin, dataFiles, packages: () => [...packages].map(mirrorPath).sort() };
}

/** The path from the first `node_modules/` on: where it lives in the executable's mirror. */
export function mirrorPath(path) {
  const at = path.indexOf(`${sep}node_modules${sep}`);
  if (at < 0) throw new Error(`${path} is not inside node_modules`);
  const mirrored = path
    .slice(at + 1)
    .split(sep)
    .join('/');
  if (mirrored.split('/').includes('..')) throw new Error(`${path}: .. in a mirrored path`);
  return mirrored;
}

/** The package directory holding a file: the segment after the last node_modules (with its @scope). */
function packageRoot(file) {
  const parts = file.split(sep);
  const at = parts.lastIndexOf('node_modules');
  const length = parts[at + 1]?.startsWith('@') ? at + 3 : at + 2;
  return parts.slice(0, length).join(sep);
}

/** Files of a package, not descending into its own node_modules (other packages). */
function walk(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : walk(path);
    return entry.isFile() ? [path] : [];
  });
}

/** Offset just past a leading hashbang, comments, whitespace and "use strict" directive. */
export function directivePrologueEnd(text) {
  const match = /^(?:#![^\n]*\n)?(?:\s|\/\/[^\n]*|\/\*[\s\S]*?\*\/)*(?:(["'])use strict\1;?)?/.exec(text);
  return match?.[0].length ?? 0;
}
