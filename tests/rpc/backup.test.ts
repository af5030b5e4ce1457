/**
 * `sepp backup FILE` against a running server: the copy opens with sqlite3 and serves the same jobs.
 * On the PostgreSQL store (SEPP_TEST_STORE=postgres) there is no backup to make: the command and
 * the RPC answer FAILED_PRECONDITION naming the store, and write no file.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { connect, constants } from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { status } from '@grpc/grpc-js';
import Database from 'better-sqlite3';
import type { BackupChunk } from '../../clients/typescript/src/gen/sepp/v1/admin.js';
import { SeppError } from '../../src/engine/errors.ts';
import { cliEntry } from '../helpers/cli.ts';
import { call, startTestServer, type TestServer, testJob } from '../helpers/server.ts';
import { testStoreKind } from '../helpers/test-store.ts';

const run = promisify(execFile);

if (testStoreKind === 'postgres') {
  test('on PostgreSQL, sepp backup and the Backup RPC answer FAILED_PRECONDITION naming the store', async () => {
    const t = await startTestServer();
    const dir = mkdtempSync(join(tmpdir(), 'sepp-backup-'));
    try {
      await call(t.client, t.client.enqueue, { job: testJob('reports') });
      const file = join(dir, 'copy.db');
      const refused = await run(process.execPath, [
        ...cliEntry(),
        'backup',
        file,
        '--server',
        t.address,
      ]).then(
        () => assert.fail('the backup of a PostgreSQL store went through'),
        (e: { code: number; stderr: string }) => e,
      );
      assert.notEqual(refused.code, 0);
      assert.match(refused.stderr, /store \(postgres\) makes no backups/);
      assert.equal(existsSync(file), false, 'no file is left');
      const stream = t.client.backup({});
      const failure = await new Promise<{ code: number; details: string }>((resolve, reject) => {
        stream.on('data', () => reject(new Error('a chunk of a PostgreSQL backup')));
        stream.on('error', resolve);
      });
      assert.equal(failure.code, status.FAILED_PRECONDITION);
      assert.match(failure.details, /store \(postgres\) makes no backups/);
      await assert.rejects(
        t.server.engine.backup(join(dir, 'engine.db')),
        /store \(postgres\) makes no backups/,
      );
    } finally {
      await t.dispose();
      rmSync(dir, { recursive: true, force: true });
    }
  });
} else {
  sqliteBackupTests();
}

function sqliteBackupTests(): void {
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
        uniqueWhileActive: false,
        group: '',
        dependsOn: [],
        onDependencyFailure: 0,
        timeoutMs: 0,
        debounceKey: '',
        debounceMs: 0,
        debounceMaxMs: 0,
      });
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const { results } = await call(t.client, t.client.enqueueBatch, {
          jobs: Array.from({ length: 200 }, (_, j) => job(i * 200 + j)),
        });
        for (const r of results) if (r.outcome?.$case === 'accepted') ids.push(r.outcome.value.jobId);
      }
      const file = join(dir, 'copy.db');
      const { stderr } = await run(process.execPath, [...cliEntry(), 'backup', file, '--server', t.address]);
      assert.match(stderr, /backup written to .*copy\.db/);
      // Audited like every admin change, naming the door: the sepp command (src/rpc/audit-input.ts).
      const { entries } = await call(t.client, t.client.listAuditEntries, {
        actor: '',
        action: 'server.backup',
        target: '',
        pageSize: 10,
        pageToken: '',
      });
      assert.deepEqual(
        entries.map((e) => [e.actor, e.target, JSON.parse(e.detailsJson).via]),
        [['anonymous', 'server', 'cli']],
      );

      // It is a plain SQLite database with every job in it.
      const copy = new Database(file, { readonly: true });
      assert.equal(copy.pragma('integrity_check', { simple: true }), 'ok');
      const row = copy.prepare("SELECT count(*) AS n FROM jobs WHERE queue = 'reports'").get() as {
        n: number;
      };
      assert.equal(row.n, 1000);
      copy.close();

      // Refuses to overwrite without --force.
      const again = await run(process.execPath, [...cliEntry(), 'backup', file, '--server', t.address]).catch(
        (e: { code: number; stderr: string }) => e,
      );
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
        assert.equal(
          (await restored.server.engine.listQueues()).find((q) => q.name === 'reports')?.counts.ready,
          1000,
        );
      } finally {
        await restored.dispose();
      }
    } finally {
      await t.dispose();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  /** Temporary backup copies in the data directory, and this process's descriptors open on one (deleted or not). */
  function backupLeftovers(dataDir: string): { files: string[]; descriptors: string[] } {
    const files = readdirSync(dataDir).filter((name) => name.endsWith('.db.tmp'));
    const descriptors = readdirSync('/proc/self/fd')
      .map((fd) => {
        try {
          return readlinkSync(`/proc/self/fd/${fd}`);
        } catch {
          return ''; // closed while listing
        }
      })
      .filter((target) => target.startsWith(dataDir) && target.includes('.db.tmp'));
    return { files, descriptors };
  }

  /** Polls `check` until it holds; the deadline is only a hang guard. */
  async function eventually(check: () => boolean, what: string): Promise<void> {
    const deadline = Date.now() + 30_000;
    while (!check()) {
      if (Date.now() > deadline) assert.fail(`still not true after 30 s: ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  describe('a Backup cancelled by the client', () => {
    let t: TestServer;
    before(async () => {
      t = await startTestServer();
      // About 24 MiB: more than HTTP/2 flow control and grpc-js buffer for a client that does not read.
      for (let i = 0; i < 30; i++) {
        await call(t.client, t.client.enqueueBatch, {
          jobs: Array.from({ length: 100 }, (_, j) =>
            testJob('bulky', { payload: randomBytes(8 * 1024), idempotencyKey: `b${i}-${j}` }),
          ),
        });
      }
    });
    after(() => t.dispose());

    /** A raw HTTP/2 Backup call that never reads: the server's sends back up and it waits for the client. */
    function stalledBackup(headers: Record<string, string> = {}) {
      const session = connect(`http://${t.address}`);
      const request = session.request({
        ':method': 'POST',
        ':path': '/sepp.v1.QueueService/Backup',
        'content-type': 'application/grpc',
        te: 'trailers',
        ...headers,
      });
      request.on('error', () => {});
      request.pause();
      request.end(Buffer.from([0, 0, 0, 0, 0])); // one empty BackupRequest
      return { session, request };
    }

    const cleanedUp = () => {
      const left = backupLeftovers(t.dataDir);
      return left.files.length === 0 && left.descriptors.length === 0;
    };

    test('whose deadline passes while the server waits for it to read: the copy and its descriptor go', async () => {
      // The client neither reads nor cancels; only its deadline (grpc-timeout) ends the call.
      const { session } = stalledBackup({ 'grpc-timeout': '3S' });
      try {
        await eventually(() => backupLeftovers(t.dataDir).descriptors.length > 0, 'the copy is being sent');
        await eventually(cleanedUp, 'the temporary copy is removed and its descriptor closed');
      } finally {
        session.destroy();
      }
    });

    test('while the server waits for the client to read: the copy and its descriptor go at once', async () => {
      const { session, request } = stalledBackup();
      try {
        await eventually(() => backupLeftovers(t.dataDir).descriptors.length > 0, 'the copy is being sent');
        request.close(constants.NGHTTP2_CANCEL);
        await eventually(cleanedUp, 'the temporary copy is removed and its descriptor closed');
      } finally {
        session.destroy();
      }
      // The next backup runs (the first one no longer holds the engine's one backup slot).
      const next = t.client.backup({});
      const done = await new Promise<BackupChunk>((resolve, reject) => {
        next.on('data', (chunk: BackupChunk) => {
          if (chunk.kind?.$case === 'done') resolve(chunk);
        });
        next.on('error', reject);
      });
      assert.ok(done.kind?.$case === 'done' && done.kind.value.sizeBytes > 20 * 1024 * 1024);
    });

    test('while the engine is still copying: the copy stops at its next step, its file goes', async () => {
      const stream = t.client.backup({});
      stream.on('error', () => {});
      await new Promise<void>((resolve) => {
        stream.on('data', (chunk: BackupChunk) => {
          if (chunk.kind?.$case === 'progress') resolve();
        });
      });
      stream.cancel();
      await eventually(cleanedUp, 'the temporary copy is removed');
      // The copy of about 24 MiB took many steps; one stopped by the cancel no longer holds
      // the engine's one backup slot, so a new backup starts at once.
      const next = t.client.backup({});
      const first = await new Promise<BackupChunk>((resolve, reject) => {
        next.on('data', resolve);
        next.on('error', reject);
      });
      assert.equal(first.kind?.$case, 'progress');
      next.cancel();
      await eventually(() => backupLeftovers(t.dataDir).files.length === 0, 'the second copy is removed');
    });

    test('the engine stops a copy at the step whose progress callback throws (what a cancel does)', async () => {
      const copy = join(t.dataDir, 'engine-stop.db.tmp');
      let steps = 0;
      await assert.rejects(
        t.server.engine.backup(copy, () => {
          steps++;
          throw new SeppError('unavailable', 'the backup was cancelled');
        }),
        /cancelled/,
      );
      assert.equal(steps, 1, 'no step after the one that threw');
      rmSync(copy, { force: true });
      // The engine's one backup slot is free again.
      await t.server.engine.backup(copy);
      rmSync(copy, { force: true });
    });
  });
}
