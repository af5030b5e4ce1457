/**
 * Other processes on the live database. Readers never get in the writer's way;
 * a process that takes the write lock for a moment (Litestream does, to write
 * its bookkeeping rows and to restart the WAL) makes sepp's next commit wait
 * for it (busy_timeout), not fail. And a database that a sepp from before
 * normal locking left behind opens with all it committed.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { databaseFileName, openDataDir } from '../../src/store/sqlite/open.ts';
import { job, withEngine } from '../helpers/engine.ts';

const hasSqlite = spawnSync('sqlite3', ['-version'], { stdio: 'ignore' }).status === 0;

test('a commit waits for another process that holds the write lock for a moment, then succeeds', {
  skip: hasSqlite ? false : 'sqlite3 is not installed (apt-get install sqlite3)',
}, async () => {
  await withEngine({}, async ({ dataDir, engine }) => {
    await engine.enqueue(job('q'));
    // sqlite3 takes the write lock, says so, holds it for half a second, then lets go.
    const holder = spawn('sqlite3', [join(dataDir, databaseFileName)], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const locked = new Promise<void>((resolve) => holder.stdout?.once('data', () => resolve()));
    const exited = new Promise<number | null>((resolve) => holder.on('exit', resolve));
    holder.stdin?.end("BEGIN IMMEDIATE;\nSELECT 'locked';\n.shell sleep 0.5\nROLLBACK;\n");
    await locked;
    const { jobId } = await engine.enqueue(job('q'));
    assert.ok(jobId);
    assert.equal(await exited, 0);
    assert.equal((await engine.listQueues())[0]?.counts.ready, 2);
  });
});

test('a database left by a server in EXCLUSIVE mode (WAL not checkpointed, no -shm) opens with every commit', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sepp-upgrade-'));
  try {
    const db = join(dataDir, databaseFileName);
    // What sepp before normal locking left after kill -9: committed pages only in the
    // WAL, the WAL index only in the dead process's memory.
    const child = spawnSync(
      process.execPath,
      [
        '-e',
        `const db = new (require('better-sqlite3'))(${JSON.stringify(db)});
         db.pragma('locking_mode = EXCLUSIVE');
         db.pragma('journal_mode = WAL');
         db.pragma('wal_autocheckpoint = 0');
         db.exec('CREATE TABLE kept (n INTEGER)');
         for (let n = 0; n < 100; n++) db.prepare('INSERT INTO kept VALUES (?)').run(n);
         process.kill(process.pid, 'SIGKILL');`,
      ],
      { encoding: 'utf8' },
    );
    assert.equal(child.signal, 'SIGKILL', child.stderr);
    assert.ok(statSync(`${db}-wal`).size > 0);
    assert.equal(existsSync(`${db}-shm`), false);
    const opened = openDataDir(dataDir, { durability: 'full' });
    try {
      assert.equal(opened.prepare('SELECT count(*) FROM kept').pluck().get(), 100);
      assert.equal(opened.pragma('locking_mode', { simple: true }), 'normal');
      assert.equal(existsSync(`${db}-shm`), true, 'the WAL index is rebuilt in the shared file');
    } finally {
      opened.close();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});
