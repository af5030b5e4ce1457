/**
 * scripts/check-layers.mjs on small trees written for each case: the store is a
 * seam (only a backend imports a database driver, only the composition root
 * imports a backend) and the engine's rooms meet at their faces (index.ts).
 * The script checks the tree it stands in, so each case copies it into a
 * temporary directory beside the files of that case.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';

const script = new URL('../../scripts/check-layers.mjs', import.meta.url).pathname;

/** A tree that passes: a backend under the interface, an engine of two rooms, the root picking the backend. */
const goodTree: Record<string, string> = {
  'clients/typescript/package.json': '{"dependencies": {}}',
  'clients/typescript/src/index.ts': 'export const sdk = 1;\n',
  'src/platform/selftest.ts': "import Database from 'better-sqlite3';\nexport const db = Database;\n",
  'src/store/store.ts': 'export interface Store { kind: string }\n',
  'src/store/sqlite/sqlite-store.ts':
    "import Database from 'better-sqlite3';\nimport type { Store } from '../store.ts';\nexport const open = (): Store => ({ kind: String(Database) });\n",
  'src/engine/jobs/enqueue.ts':
    "import type { Store } from '../../store/store.ts';\nexport type E = Store;\n",
  'src/engine/jobs/index.ts': "export type { E } from './enqueue.ts';\n",
  'src/engine/leases/reserve.ts': "import type { E } from '../jobs/index.ts';\nexport type R = E;\n",
  'src/engine/leases/index.ts': "export type { R } from './reserve.ts';\n",
  'src/engine/engine.ts': "import type { R } from './leases/index.ts';\nexport type Engine = R;\n",
  'src/app.ts':
    "import type { Engine } from './engine/engine.ts';\nimport { open } from './store/sqlite/sqlite-store.ts';\nexport const app = (e?: Engine) => [e, open()];\n",
};

function checkLayers(changes: Record<string, string>): { status: number | null; output: string } {
  const root = mkdtempSync(join(tmpdir(), 'sepp-layers-'));
  try {
    for (const [path, text] of Object.entries({ ...goodTree, ...changes })) {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), text);
    }
    mkdirSync(join(root, 'scripts'));
    copyFileSync(script, join(root, 'scripts/check-layers.mjs'));
    const run = spawnSync(process.execPath, [join(root, 'scripts/check-layers.mjs')], { encoding: 'utf8' });
    return { status: run.status, output: run.stdout + run.stderr };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

test('a tree whose imports keep the seam and the faces passes', () => {
  const { status, output } = checkLayers({});
  assert.equal(status, 0, output);
  assert.match(output, /the store is a seam, the engine's rooms meet at their faces/);
});

test("an engine file reaching into another room's file fails, naming the face to use", () => {
  const { status, output } = checkLayers({
    'src/engine/leases/reserve.ts': "import type { E } from '../jobs/enqueue.ts';\nexport type R = E;\n",
  });
  assert.equal(status, 1, output);
  assert.match(
    output,
    /src\/engine\/leases\/reserve\.ts imports \.\.\/jobs\/enqueue\.ts: another room of the engine is reached through its face, jobs\/index\.ts/,
  );
});

test('a database driver imported above a backend fails: in the engine and in the store interface', () => {
  const { status, output } = checkLayers({
    'src/engine/jobs/enqueue.ts':
      "import Database from 'better-sqlite3';\nexport type E = typeof Database;\n",
    'src/store/store.ts': "import pg from 'pg';\nexport interface Store { kind: typeof pg }\n",
  });
  assert.equal(status, 1, output);
  assert.match(output, /src\/engine\/jobs\/enqueue\.ts imports better-sqlite3: only a store backend/);
  assert.match(output, /src\/store\/store\.ts imports pg: only a store backend/);
});

test('a backend imported by anything but the composition root fails', () => {
  const { status, output } = checkLayers({
    'src/engine/engine.ts':
      "import type { R } from './leases/index.ts';\nimport { open } from '../store/sqlite/sqlite-store.ts';\nexport type Engine = R | typeof open;\n",
  });
  assert.equal(status, 1, output);
  assert.match(
    output,
    /src\/engine\/engine\.ts imports \.\.\/store\/sqlite\/sqlite-store\.ts: only the composition root \(app\*\.ts\) picks a store backend/,
  );
});
