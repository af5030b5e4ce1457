#!/usr/bin/env node
// Builds the @sepp-queue/client package into dist/ (`npm run build`; `npm pack` runs it
// too, as prepack). Run inside the sepp repository: esbuild and TypeScript come from its
// devDependencies.
//
// One implementation, loadable both ways, so a program that both imports and requires the
// package (directly or through its dependencies) still has one SeppClient class and one
// set of error classes for `instanceof`:
//   dist/cjs/index.js    the SDK and its generated protocol code bundled by esbuild into one
//                        CommonJS file (dependencies stay external); dist/cjs/package.json
//                        says "commonjs", since the package itself is "type": "module";
//   dist/cjs/*.d.ts      declarations from tsc, one per source file;
//   dist/esm/index.js    an ES module that loads the CommonJS build and re-exports it by name;
//   dist/esm/index.d.ts  its declarations: the same, re-exported.
// The optional entry point `@sepp-queue/client/pg` (src/pg.ts: enqueue inside a PostgreSQL
// transaction) is built the same way, as dist/cjs/pg.js and dist/esm/pg.js.
// Usage: node build.mjs
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const here = fileURLToPath(new URL('.', import.meta.url));
const dist = join(here, 'dist');
const cjsDir = join(dist, 'cjs');
const esmDir = join(dist, 'esm');
const started = performance.now();
const pkg = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8'));

rmSync(dist, { recursive: true, force: true });

/** The package's entry points: `.` and the optional `./pg`. */
const entries = ['index', 'pg'];

// 1. The CommonJS bundles.
await build({
  entryPoints: entries.map((entry) => join(here, 'src', `${entry}.ts`)),
  absWorkingDir: here,
  outdir: cjsDir,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  // Dependencies and the optional peer are the application's to install, never copied in.
  packages: 'external',
  // trace.ts loads the optional @opentelemetry/api with createRequire(import.meta.url);
  // CommonJS has no import.meta, and createRequire takes this file's path as well.
  define: { 'import.meta.url': '__filename' },
  legalComments: 'inline',
  logLevel: 'warning',
});
writeFileSync(join(cjsDir, 'package.json'), `${JSON.stringify({ type: 'commonjs' }, null, 2)}\n`);

// 2. Declarations. The sources import each other as `./x.ts`, which tsc keeps in the
// declarations it writes; TypeScript before 5.7 reads only `./x.js` in a declaration file,
// and that is what the emitted JavaScript files would be called, so rewrite them.
const tscBin = join(createRequire(import.meta.url).resolve('typescript/package.json'), '..', 'bin', 'tsc');
const tsc = spawnSync(process.execPath, [tscBin, '-p', join(here, 'tsconfig.json')], {
  cwd: here,
  encoding: 'utf8',
});
if (tsc.status !== 0) fail(`tsc failed (exit ${tsc.status}):\n${tsc.stdout}${tsc.stderr}`);
const declarations = listFiles(cjsDir).filter((f) => f.endsWith('.d.ts'));
for (const file of declarations) {
  const text = readFileSync(file, 'utf8');
  writeFileSync(file, text.replace(/(from\s+['"]\.{1,2}\/[^'"]+)\.ts(['"])/g, '$1.js$2'));
}
const openTelemetryTypes = declarations.filter((f) => readFileSync(f, 'utf8').includes('@opentelemetry/api'));
// A public declaration naming OpenTelemetry's types would break type checks in projects
// without the optional peer; only trace.d.ts (not exported) may.
const leaked = openTelemetryTypes.filter((f) => !f.endsWith('trace.d.ts'));
if (leaked.length > 0) fail(`declarations name @opentelemetry/api: ${leaked.map((f) => relative(here, f))}`);

// 3. The ES module faces: every name a CommonJS build exports, by name (not `export *`,
// which would depend on Node's guess of a CommonJS module's names). Each loads its build
// with require: `import` of a CommonJS file costs Node 20 about half a second more here
// (bench/sdk-package.ts), and require shares the module with require('@sepp-queue/client').
mkdirSync(esmDir, { recursive: true });
let exported = 0;
for (const entry of entries) {
  const cjsFile = join(cjsDir, `${entry}.js`);
  const cjsExports = Object.keys(createRequire(import.meta.url)(cjsFile)).sort();
  if (cjsExports.length === 0 || cjsExports.includes('default'))
    fail(`${entry}: unexpected exports: ${cjsExports}`);
  const esm = [
    `// The ES module face of @sepp-queue/client${entry === 'index' ? '' : `/${entry}`}: the CommonJS build, re-exported by name (see build.mjs).`,
    "import { createRequire } from 'node:module';",
    '',
    `const sdk = createRequire(import.meta.url)('../cjs/${entry}.js');`,
    `export const { ${cjsExports.join(', ')} } = sdk;`,
    '',
  ].join('\n');
  writeFileSync(join(esmDir, `${entry}.js`), esm);
  writeFileSync(join(esmDir, `${entry}.d.ts`), `export * from '../cjs/${entry}.js';\n`);
  const viaImport = await import(pathToFileURL(join(esmDir, `${entry}.js`)).href);
  const viaRequire = createRequire(import.meta.url)(cjsFile);
  for (const name of cjsExports) {
    if (viaImport[name] !== viaRequire[name])
      fail(`dist/esm/${entry}.js: ${name} is not the CommonJS build's`);
  }
  exported += cjsExports.length;
}

const bytes = listFiles(dist).reduce((n, f) => n + statSync(f).size, 0);
console.error(
  `built ${pkg.name} ${pkg.version} into ${relative(process.cwd(), dist) || dist}: ` +
    `${listFiles(dist).length} files, ${(bytes / 1024).toFixed(0)} KiB, ${exported} exports, ` +
    `${((performance.now() - started) / 1000).toFixed(1)} s`,
);

function listFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? listFiles(path) : [path];
  });
}

function fail(message) {
  console.error(`build: ${message}`);
  process.exit(1);
}
