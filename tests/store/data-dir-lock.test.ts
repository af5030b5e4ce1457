/**
 * One server per data directory, with a lock that cannot go stale: a second
 * `sepp serve` on the same directory is refused with a message that says why,
 * and after the first is killed with SIGKILL (no chance to clean up) the next
 * one starts at once.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { DataDirInUseError, lockFileName, openDataDir } from '../../src/store/sqlite/open.ts';
import { launchServerProcess, startServerProcess } from '../helpers/process-server.ts';

test('a second server on a data directory is refused; kill -9 of the first frees the directory', {
  timeout: 120_000,
}, async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sepp-lock-'));
  const stops: Array<() => Promise<unknown>> = [];
  try {
    const first = await startServerProcess(dataDir);
    stops.push(() => first.stop('SIGKILL'));
    assert.ok(existsSync(join(dataDir, lockFileName)));
    assert.equal(existsSync(join(dataDir, `${lockFileName}-journal`)), false, 'no journal beside the lock');

    const second = launchServerProcess(dataDir);
    stops.push(() => second.stop('SIGKILL'));
    await assert.rejects(second.ready, /server exited early \(1\)/);
    assert.match(
      second.logs(),
      /^sepp: cannot start: the data directory .* is in use by another sepp \(it holds .*sepp\.lock\).*\(--data-dir, server\.data_dir\)$/m,
    );
    // In this process too (SQLite tracks its own locks within a process).
    assert.throws(() => openDataDir(dataDir, { durability: 'full' }), DataDirInUseError);

    assert.equal(await first.stop('SIGKILL'), null);
    // The lock file is still there, and does not matter: the kernel dropped the lock with the process.
    assert.ok(existsSync(join(dataDir, lockFileName)));
    const third = await startServerProcess(dataDir);
    stops.push(() => third.stop('SIGKILL'));
    assert.match(third.logs(), /"server\.started"/);
  } finally {
    for (const stop of stops) await stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
