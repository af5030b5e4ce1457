#!/usr/bin/env node
// Runs every tests/**/*.test.ts through node:test with tsx as the loader.
// Node 20's `--test` does not expand globs, so the file list is built here.
// Usage: node scripts/run-tests.mjs [substring filter...]
//
// Every server the tests start logs into a fresh directory (SEPP_TEST_LOG_DIR),
// where the tests also register every secret they use; after the run, no
// captured line may hold one (scripts/secret-grep.mjs), and a full run must
// have captured lines, servers and secrets at all.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { checkCapturedLogs } from './secret-grep.mjs';

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
const logDir = mkdtempSync(join(tmpdir(), 'sepp-test-logs-'));
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, ...files],
  { cwd: root, stdio: 'inherit', env: { ...process.env, SEPP_TEST_LOG_DIR: logDir } },
);
const secrets = checkCapturedLogs(logDir, { requireEvidence: filters.length === 0 });
console.log(secrets.summary);
for (const problem of secrets.problems) console.error(`secret check: ${problem}`);
if (secrets.ok) rmSync(logDir, { recursive: true, force: true });
else console.error(`secret check: the captured logs are kept in ${logDir}`);
process.exit(secrets.ok ? (result.status ?? 1) : 1);
