/**
 * Other processes on the live database. Readers never get in the writer's way;
 * a process that takes the write lock for a moment (Litestream does, to write
 * its bookkeeping rows and to restart the WAL) makes sepp's next commit wait
 * for it (busy_timeout), not fail.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { databaseFileName } from '../../src/store/open.ts';
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
    assert.equal(engine.listQueues()[0]?.counts.ready, 2);
  });
});
