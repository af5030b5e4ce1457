/** `sepp backup FILE` against a running server: the copy opens with sqlite3 and serves the same jobs. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { call, startTestServer } from '../helpers/server.ts';

const run = promisify(execFile);

test('sepp backup copies a live database that a new server serves as is', async () => {
  const t = await startTestServer();
  const dir = mkdtempSync(join(tmpdir(), 'sepp-backup-'));
  try {
    const job = (n: number) => ({
      queue: 'reports',
      type: 'daily',
      payload: Buffer.alloc(2048, n),
      contentType: '',
      priority: n % 10,
      schedule: undefined,
      maxAttempts: 0,
      idempotencyKey: `k${n}`,
      metadata: {},
      traceparent: '',
      tracestate: '',
      group: '',
    });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const { results } = await call(t.client, t.client.enqueueBatch, {
        jobs: Array.from({ length: 200 }, (_, j) => job(i * 200 + j)),
      });
      for (const r of results) if (r.outcome?.$case === 'accepted') ids.push(r.outcome.value.jobId);
    }
    const file = join(dir, 'copy.db');
    const { stderr } = await run(process.execPath, [
      '--import',
      'tsx',
      'src/cli/main.ts',
      'backup',
      file,
      '--server',
      t.address,
    ]);
    assert.match(stderr, /backup written to .*copy\.db/);

    // It is a plain SQLite database with every job in it.
    const copy = new Database(file, { readonly: true });
    assert.equal(copy.pragma('integrity_check', { simple: true }), 'ok');
    const row = copy.prepare("SELECT count(*) AS n FROM jobs WHERE queue = 'reports'").get() as { n: number };
    assert.equal(row.n, 1000);
    copy.close();

    // Refuses to overwrite without --force.
    const again = await run(process.execPath, [
      '--import',
      'tsx',
      'src/cli/main.ts',
      'backup',
      file,
      '--server',
      t.address,
    ]).catch((e: { code: number; stderr: string }) => e);
    assert.equal((again as { code: number }).code, 2);

    // A server started on the copy serves the same jobs, deduplication included.
    const restoredDir = join(dir, 'restored');
    mkdirSync(restoredDir);
    copyFileSync(file, join(restoredDir, 'sepp.db'));
    const restored = await startTestServer({ dataDir: restoredDir });
    try {
      const info = await call(restored.client, restored.client.getJob, { jobId: ids[123]! });
      assert.equal(info.job?.payload.length, 2048);
      const dup = await call(restored.client, restored.client.enqueue, { job: job(7) });
      assert.equal(dup.deduplicated, true);
      assert.equal(dup.jobId, ids[7]);
      assert.equal(restored.server.engine.listQueues().find((q) => q.name === 'reports')?.counts.ready, 1000);
    } finally {
      await restored.dispose();
    }
  } finally {
    await t.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
});
