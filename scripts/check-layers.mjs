#!/usr/bin/env node
// Checks the layering of src/ and the SDK package (ARCHITECTURE.md):
// - in src/, imports point down cli → app → push → rpc / admin / http / telemetry → config → engine → store
//   (push, the server's own HTTP worker, writes jobs in the HTTP API's JSON);
// - the SDK (clients/typescript/src) imports only itself and its generated protocol code
//   (clients/typescript/src/gen), and of packages only node: built-ins and what its
//   package.json declares as dependencies or peer dependencies: never the server;
// - the server reaches the SDK package only for the protocol code (rpc and the CLI) and
//   the SDK's public entry point, index.ts (the CLI);
// - no module cycles.
// src/build-info.ts (version and commit) sits below every layer: anyone may import it,
// and it imports nothing from src/ — only package.json, the one file outside src/ that
// src/ may import besides the SDK package's entry points above.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';

const root = resolve(new URL('..', import.meta.url).pathname);
const src = join(root, 'src');
const sdkDir = join(root, 'clients', 'typescript');
const sdkSrc = join(sdkDir, 'src');
const protocolGen = join(sdkSrc, 'gen');
const sdkIndex = join(sdkSrc, 'index.ts');
const rank = {
  'build-info.ts': -1,
  store: 0,
  engine: 1,
  config: 2,
  telemetry: 3,
  rpc: 3,
  admin: 3,
  http: 3,
  push: 4,
  app: 5,
  cli: 6,
};
const importRe =
  /^\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|^\s*import\s+['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/gm;

function files(dir) {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}
const inside = (dir, file) => file.startsWith(`${dir}/`);
/** The layer of a file: a folder of src/, 'app', 'sdk' or 'protocol'. */
function layerOf(file) {
  if (inside(protocolGen, file)) return 'protocol';
  if (inside(sdkSrc, file)) return 'sdk';
  const top = relative(src, file).split('/')[0];
  // The composition root is app.ts and the files beside it named app-*.ts.
  return top === 'app.ts' || /^app-[a-z-]+\.ts$/.test(top) ? 'app' : top;
}
const show = (file) => relative(root, file);

const sdkPackage = JSON.parse(readFileSync(join(sdkDir, 'package.json'), 'utf8'));
const sdkPackages = new Set([
  ...Object.keys(sdkPackage.dependencies ?? {}),
  ...Object.keys(sdkPackage.peerDependencies ?? {}),
]);
const builtins = new Set(builtinModules);
/** `@scope/name/sub` → `@scope/name`; `name/sub` → `name`. */
const packageName = (spec) =>
  spec
    .split('/')
    .slice(0, spec.startsWith('@') ? 2 : 1)
    .join('/');

/** What is wrong with an import of a package (not a relative path) by `file`, or undefined. */
function checkPackageImport(file, spec) {
  const layer = layerOf(file);
  if (layer !== 'sdk' && layer !== 'protocol') return undefined;
  if (spec.startsWith('node:') || builtins.has(spec)) return undefined;
  if (sdkPackages.has(packageName(spec))) return undefined;
  return `${show(file)} imports ${spec}: the SDK may import only node: built-ins and the packages clients/typescript/package.json declares`;
}

/** What is wrong with a relative import of `target` by `file`, or undefined. */
function checkFileImport(file, spec, target) {
  const from = layerOf(file);
  const where = `${show(file)} imports ${spec}`;
  if (from === 'protocol')
    return inside(protocolGen, target) ? undefined : `${where}: generated code imports only itself`;
  if (from === 'sdk')
    return inside(sdkSrc, target) ? undefined : `${where}: the SDK may import only its own package`;
  // From here on, `file` is in src/.
  if (inside(protocolGen, target))
    return ['rpc', 'cli'].includes(from) ? undefined : `${where}: only rpc and the CLI use the protocol code`;
  if (inside(sdkSrc, target)) {
    if (target !== sdkIndex)
      return `${where}: the server uses the SDK only through its entry point, index.ts`;
    return from === 'cli' ? undefined : `${where}: only the CLI uses the SDK`;
  }
  if (!inside(src, target)) {
    return target === join(root, 'package.json')
      ? undefined
      : `${where}: src/ may import from outside src/ only package.json and the SDK package`;
  }
  const to = layerOf(target);
  if (from === to) return undefined;
  if (!(from in rank) || !(to in rank)) return `${where}: unknown layer`;
  if (rank[to] >= rank[from]) return `${where}: ${from} must not depend on ${to}`;
  return undefined;
}

const problems = [];
const graph = new Map();
for (const file of [...files(src), ...files(sdkSrc)]) {
  const text = readFileSync(file, 'utf8');
  const deps = [];
  for (const m of text.matchAll(importRe)) {
    const spec = m[1] ?? m[2] ?? m[3];
    if (!spec.startsWith('.')) {
      const problem = checkPackageImport(file, spec);
      if (problem !== undefined) problems.push(problem);
      continue;
    }
    const target = resolve(dirname(file), spec).replace(/\.js$/, '.ts');
    deps.push(target);
    const problem = checkFileImport(file, spec, target);
    if (problem !== undefined) problems.push(problem);
  }
  graph.set(file, deps);
}

// Cycle detection over the file graph (three-colour DFS).
const colour = new Map();
const stack = [];
function visit(node) {
  colour.set(node, 'grey');
  stack.push(node);
  for (const dep of graph.get(node) ?? []) {
    if (!graph.has(dep)) continue;
    const c = colour.get(dep);
    if (c === 'grey') {
      const cycle = stack.slice(stack.indexOf(dep)).concat(dep);
      problems.push(`import cycle: ${cycle.map(show).join(' → ')}`);
    } else if (c === undefined) visit(dep);
  }
  stack.pop();
  colour.set(node, 'black');
}
for (const node of graph.keys()) if (!colour.has(node)) visit(node);

if (problems.length > 0) {
  console.error(`layer check failed:\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
console.log(`layer check: ${graph.size} modules, imports point down, the SDK stands alone, no cycles`);
