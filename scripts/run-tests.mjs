#!/usr/bin/env node
// Runs every tests/**/*.test.ts through node:test with tsx as the loader.
// Node 20's `--test` does not expand globs, so the file list is built here.
// Usage: node scripts/run-tests.mjs [substring filter...]
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const filters = process.argv.slice(2);

function collect(dir) {
  const found = [];
  for (const name of readdirSync(dir)) {
    if (name === 'artifacts' || name === 'node_modules') continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) found.push(...collect(path));
    else if (name.endsWith('.test.ts')) found.push(path);
  }
  return found;
}

const files = collect(join(root, 'tests'))
  .map((f) => relative(root, f))
  .filter((f) => filters.length === 0 || filters.some((s) => f.includes(s)))
  .sort();
if (files.length === 0) {
  console.error(`no test files match ${filters.join(' ')}`);
  process.exit(1);
}
const concurrency = process.env.SEPP_TEST_CONCURRENCY ?? '2';
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, ...files],
  { cwd: root, stdio: 'inherit' },
);
process.exit(result.status ?? 1);
