#!/usr/bin/env node
// Checks the layering of src/ and the SDK package (ARCHITECTURE.md):
// - in src/, imports point down cli → app → push → rpc / admin / http / telemetry → api-schema →
//   config → engine → store → platform (push, the server's own HTTP worker, writes jobs in the
//   HTTP API's JSON; api-schema holds the JSON Schemas the admin and HTTP APIs share);
// - the SDK (clients/typescript/src) imports only itself and its generated protocol code
//   (clients/typescript/src/gen), and of packages only node: built-ins and what its
//   package.json declares as dependencies or peer dependencies: never the server;
// - the server reaches the SDK package only for the protocol code (rpc and the CLI) and
//   the SDK's public entry point, index.ts (the CLI);
// - no module cycles;
// - the store is a seam (issue 31): src/store/*.ts is the Store interface, src/store/<backend>/ a
//   backend. Above the store only its interface files are imported; a backend is picked by the
//   composition root (app*.ts) alone, and only a backend (and src/platform/, which loads SQLite
//   to test the build) imports a database driver;
// - the engine is in rooms: a file of src/engine/ imports a capability folder other than its own
//   (src/engine/<room>/) only through that folder's index.ts, its public face; the engine's root
//   files (its vocabulary and frame) may also read a room's vocabulary, <room>/types.ts.
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
  platform: 0,
  store: 1,
  engine: 2,
  config: 3,
  'api-schema': 3.5,
  telemetry: 4,
  rpc: 4,
  admin: 4,
  http: 4,
  push: 5,
  app: 6,
  cli: 7,
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

const engineDir = join(src, 'engine');
const storeDir = join(src, 'store');
/** Database drivers: only a store backend (and the platform's self-test) may import one. */
const drivers = new Set(['better-sqlite3', 'pg', 'postgres']);

/** What is wrong with an import of a package (not a relative path) by `file`, or undefined. */
function checkPackageImport(file, spec) {
  if (drivers.has(packageName(spec))) {
    const backend = inside(storeDir, file) && dirname(file) !== storeDir;
    if (!backend && layerOf(file) !== 'platform')
      return `${show(file)} imports ${spec}: only a store backend (src/store/<backend>/) talks to a database driver`;
  }
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
  const seam = checkStoreSeam(file, where, target, from);
  if (seam !== undefined) return seam;
  if (from === 'engine' && to === 'engine') return checkRooms(file, where, target);
  if (from === to) return undefined;
  if (!(from in rank) || !(to in rank)) return `${where}: unknown layer`;
  if (rank[to] >= rank[from]) return `${where}: ${from} must not depend on ${to}`;
  return undefined;
}

/** Above the store, only its interface files; a backend only from the composition root. */
function checkStoreSeam(file, where, target, from) {
  if (!inside(storeDir, target) || inside(storeDir, file)) return undefined;
  if (dirname(target) === storeDir) return undefined;
  if (from === 'app') return undefined;
  return `${where}: only the composition root (app*.ts) picks a store backend; import the Store interface (src/store/*.ts)`;
}

/** The room (capability folder) of a file of the engine, or '' for the engine's root files. */
function roomOf(file) {
  const parts = relative(engineDir, file).split('/');
  return parts.length > 1 ? parts[0] : '';
}

/** Inside the engine: another room only through its index.ts (root files may read its types.ts). */
function checkRooms(file, where, target) {
  const room = roomOf(file);
  const targetRoom = roomOf(target);
  if (targetRoom === '' || targetRoom === room) return undefined;
  const name = relative(join(engineDir, targetRoom), target);
  if (name === 'index.ts') return undefined;
  if (room === '' && name === 'types.ts') return undefined;
  return `${where}: another room of the engine is reached through its face, ${targetRoom}/index.ts`;
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
console.log(
  `layer check: ${graph.size} modules, imports point down, the store is a seam, the engine's rooms meet at their faces, the SDK stands alone, no cycles`,
);
