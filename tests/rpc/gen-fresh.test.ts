// The generated protocol code is committed; this regenerates it into a temporary
// directory and fails when the committed copy differs, so a .proto change can
// never ship without its code (STYLE.md: generated code is checked in CI).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { test } from 'node:test';

const root = new URL('../..', import.meta.url).pathname;
const committedDir = join(root, 'src', 'rpc', 'gen');
const protoc = process.env.PROTOC ?? 'protoc';

function readTree(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (at: string): void => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      if (statSync(path).isDirectory()) walk(path);
      else files.set(relative(dir, path), readFileSync(path, 'utf8'));
    }
  };
  walk(dir);
  return files;
}

test('committed src/rpc/gen matches what npm run gen produces from proto/', (t) => {
  const probe = spawnSync(protoc, ['--version'], { encoding: 'utf8' });
  if (probe.error !== undefined || probe.status !== 0) {
    const reason = `protoc not available (${probe.error?.message ?? `exit ${probe.status}`}); freshness of src/rpc/gen NOT checked`;
    console.log(`SKIPPED: ${reason}`);
    t.skip(reason);
    return;
  }
  const outDir = mkdtempSync(join(tmpdir(), 'sepp-gen-'));
  try {
    const run = spawnSync(process.execPath, [join(root, 'scripts', 'gen.mjs'), '--out', outDir, '--quiet'], {
      cwd: root,
      encoding: 'utf8',
    });
    assert.equal(run.status, 0, `scripts/gen.mjs failed:\n${run.stderr}`);
    const fresh = readTree(outDir);
    const committed = readTree(committedDir);
    const stale = [...new Set([...fresh.keys(), ...committed.keys()])]
      .filter((file) => fresh.get(file) !== committed.get(file))
      .sort();
    assert.deepEqual(
      stale,
      [],
      `src/rpc/gen is stale in ${stale.join(', ')}: run \`npm run gen\` and commit`,
    );
  } finally {
    rmSync(outDir, { recursive: true, force: true });
  }
});
