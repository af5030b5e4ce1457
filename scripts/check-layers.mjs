#!/usr/bin/env node
// Checks the layering of src/ (ARCHITECTURE.md): imports point down
// cli → app → rpc / admin / telemetry → config → engine → store, the SDK in
// src/client imports only the generated protocol code, and no module cycles.
// src/build-info.ts (version and commit) sits below every layer: anyone may import it,
// and it imports nothing from src/ — only package.json, the one file outside src/ that
// src/ may import.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const src = resolve(new URL('..', import.meta.url).pathname, 'src');
// The generated protocol code lives in the SDK package, which ships it; the server imports it from there.
const protocolGen = resolve(src, '..', 'clients', 'typescript', 'src', 'gen');
const rank = {
  'build-info.ts': -1,
  store: 0,
  engine: 1,
  config: 2,
  telemetry: 3,
  rpc: 3,
  admin: 3,
  app: 4,
  cli: 5,
};
const importRe = /^\s*(?:import|export)\s[^'"]*?from\s+['"](\.[^'"]+)['"]|^\s*import\s+['"](\.[^'"]+)['"]/gm;

function files(dir) {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}
function layerOf(file) {
  const rel = relative(src, file);
  const top = rel.split('/')[0];
  if (top === 'app.ts') return 'app';
  return top;
}

const problems = [];
const graph = new Map();
for (const file of files(src)) {
  const text = readFileSync(file, 'utf8');
  const deps = [];
  for (const m of text.matchAll(importRe)) {
    const spec = m[1] ?? m[2];
    const target = resolve(dirname(file), spec).replace(/\.js$/, '.ts');
    deps.push(target);
    if (target.startsWith(`${protocolGen}/`)) {
      if (!['rpc', 'cli', 'client'].includes(layerOf(file)))
        problems.push(
          `${relative(src, file)} imports ${spec}: only rpc, the CLI and the SDK use the protocol code`,
        );
      continue;
    }
    if (!target.startsWith(`${src}/`)) {
      if (target !== resolve(src, '..', 'package.json'))
        problems.push(
          `${relative(src, file)} imports ${spec}: src/ may import only package.json from outside src/`,
        );
      continue;
    }
    const from = layerOf(file);
    const to = layerOf(target);
    if (from === to) continue;
    const where = `${relative(src, file)} imports ${relative(src, target)}`;
    if (from === 'client') {
      problems.push(`${where}: the SDK may import only the protocol code`);
      continue;
    }
    if (to === 'client') {
      if (from !== 'cli') problems.push(`${where}: only the CLI uses the SDK`);
      continue;
    }
    if (!(from in rank) || !(to in rank)) problems.push(`${where}: unknown layer`);
    else if (rank[to] >= rank[from]) problems.push(`${where}: ${from} must not depend on ${to}`);
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
      problems.push(`import cycle: ${cycle.map((f) => relative(src, f)).join(' → ')}`);
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
console.log(`layer check: ${graph.size} modules, imports point down, no cycles`);
