/**
 * Disk full: on a small tmpfs, writes fail with UNAVAILABLE, nothing that
 * failed is stored, the server stays up, and it serves normally once space is
 * freed. Needs root for the mount (CI runs as root).
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { type ServiceError, status } from '@grpc/grpc-js';
import { call, startTestServer } from '../helpers/server.ts';

const canMount =
  process.getuid?.() === 0 && spawnSync('mount', ['--version'], { stdio: 'ignore' }).status === 0;

test('a full disk fails writes with UNAVAILABLE and the server recovers when space returns', {
  skip: canMount ? false : 'needs root to mount a small tmpfs (CI runs as root)',
}, async () => {
  const mountPoint = mkdtempSync(join(tmpdir(), 'sepp-full-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', mountPoint]);
  const dataDir = join(mountPoint, 'data');
  mkdirSync(dataDir);
  let t = await startTestServer({ dataDir });
  try {
    const job = (n: number) => ({
      queue: 'full',
      type: 't',
      payload: Buffer.alloc(32 * 1024, n % 256),
      contentType: '',
      priority: 0,
      schedule: undefined,
      maxAttempts: 0,
      idempotencyKey: `k${n}`,
      metadata: {},
      traceparent: '',
      tracestate: '',
      group: '',
    });
    const acknowledged: string[] = [];
    for (let n = 0; n < 10; n++)
      acknowledged.push((await call(t.client, t.client.enqueue, { job: job(n) })).jobId);

    // Fill what is left of the file system.
    const filler = join(mountPoint, 'filler');
    try {
      writeFileSync(filler, Buffer.alloc(8 * 1024 * 1024));
    } catch {
      // ENOSPC: the filler took every free block it could.
    }
    let failures = 0;
    for (let n = 10; n < 40; n++) {
      try {
        acknowledged.push((await call(t.client, t.client.enqueue, { job: job(n) })).jobId);
      } catch (error) {
        const e = error as ServiceError;
        assert.equal(e.code, status.UNAVAILABLE, `${status[e.code]}: ${e.details}`);
        assert.match(e.details, /storage unavailable, nothing was written/);
        failures++;
      }
    }
    assert.ok(failures > 0, 'the disk filled up');
    // The server is up: reads work.
    assert.ok((await call(t.client, t.client.listQueues, {})).queues.length > 0);

    // Free the space: writes work again.
    rmSync(filler);
    const after = await call(t.client, t.client.enqueue, { job: job(1000) });
    acknowledged.push(after.jobId);

    // Every acknowledged job is there after a restart, and nothing else.
    t = await t.restart();
    const ready = t.server.engine.listQueues().find((q) => q.name === 'full')?.counts.ready;
    assert.equal(ready, acknowledged.length);
    for (const id of acknowledged) assert.equal(t.server.engine.getJob(id).state, 'ready');
    assert.deepEqual(t.server.engine.counterMismatches(), []);
  } finally {
    await t.dispose();
    execFileSync('umount', [mountPoint]);
    rmSync(mountPoint, { recursive: true, force: true });
  }
});
