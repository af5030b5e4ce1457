/**
 * The database and its WAL and shared-memory files are owner-only (0600)
 * whatever the umask (issue 14, item 17): anyone who can read them can read
 * every job.
 */
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { databaseFileName, openDataDir } from '../../src/store/sqlite/open.ts';

const modeOf = (path: string) => (statSync(path).mode & 0o777).toString(8);

/** Runs `body` with umask 0, the most permissive, restoring it after (synchronously: nothing else runs meanwhile). */
function withOpenUmask<T>(body: () => T): T {
  const previous = process.umask(0);
  try {
    return body();
  } finally {
    process.umask(previous);
  }
}

test('a new database, its -wal and (opened in shared mode later) its -shm are 0600 even with umask 0', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-modes-'));
  try {
    const dataDir = join(dir, 'data');
    const file = join(dataDir, databaseFileName);
    withOpenUmask(() => {
      const db = openDataDir(dataDir, { durability: 'full' });
      db.exec('CREATE TABLE IF NOT EXISTS mode_probe (x); INSERT INTO mode_probe VALUES (1)');
      assert.equal(modeOf(dataDir), '700');
      assert.equal(modeOf(file), '600');
      assert.ok(existsSync(`${file}-wal`));
      assert.equal(modeOf(`${file}-wal`), '600');
      db.close();
      // The server runs in exclusive locking mode (no -shm); a reader such as sqlite3 makes one.
      const reader = new Database(file);
      reader.prepare('SELECT count(*) FROM mode_probe').get();
      assert.ok(existsSync(`${file}-shm`));
      assert.equal(modeOf(`${file}-shm`), '600');
      reader.close();
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an existing database keeps the mode its operator gave it', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-modes-'));
  try {
    openDataDir(dir, { durability: 'full' }).close();
    chmodSync(join(dir, databaseFileName), 0o640);
    openDataDir(dir, { durability: 'full' }).close();
    assert.equal(modeOf(join(dir, databaseFileName)), '640');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
