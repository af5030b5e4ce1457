import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { nativeBindingPath } from '../../src/platform/native-binding.ts';
import { removeStaleNativeDirs } from '../../src/platform/private-dir.ts';
import { readSeaAsset, runningAsSea, seaAssets, verifySeaAssets } from '../../src/platform/sea-assets.ts';

test('from source there is no single executable: default addon, no embedded assets', () => {
  assert.equal(runningAsSea(), false);
  assert.equal(nativeBindingPath(), undefined);
  assert.equal(seaAssets().size, 0);
  assert.equal(readSeaAsset('native/better_sqlite3.node'), undefined);
  assert.deepEqual(verifySeaAssets(), { count: 0, sizeBytes: 0 });
});

test('stale native dirs of dead processes are removed; live, own and foreign names are kept', (t) => {
  const base = mkdtempSync(join(tmpdir(), 'sepp-native-test-'));
  t.after(() => rmSync(base, { recursive: true, force: true }));
  // A pid that was alive a moment ago and is not any more.
  const deadPid = spawnSync(process.execPath, ['-e', '0']).pid;
  const dirs = {
    dead: join(base, `sepp-native-${deadPid}-aaaaaa`),
    own: join(base, `sepp-native-${process.pid}-bbbbbb`),
    live: join(base, `sepp-native-${process.ppid}-cccccc`),
    unrelated: join(base, 'something-else'),
  };
  for (const dir of Object.values(dirs)) mkdirSync(dir);
  const outside = join(base, 'something-else');
  const link = join(base, `sepp-native-${deadPid}-link`);
  symlinkSync(outside, link);

  removeStaleNativeDirs(base);

  assert.equal(existsSync(dirs.dead), false);
  assert.ok(existsSync(dirs.own) && existsSync(dirs.live) && existsSync(dirs.unrelated));
  assert.ok(existsSync(link), 'a symlink is never followed or removed');
});
