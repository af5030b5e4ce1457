/**
 * Disk full: on a small tmpfs, writes fail with UNAVAILABLE, nothing that
 * failed is stored, the server stays up, and it serves normally once space is
 * freed. Needs root for the mount (CI runs as root).
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { type ServiceError, status } from '@grpc/grpc-js';
import { FakeClock } from '../../src/engine/clock.ts';
import { scrape } from '../helpers/prometheus.ts';
import { call, startTestServer } from '../helpers/server.ts';

/** A 32 KiB job with an idempotency key of its own. */
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
  uniqueWhileActive: false,
  group: '',
  dependsOn: [],
  onDependencyFailure: 0,
  timeoutMs: 0,
  debounceKey: '',
  debounceMs: 0,
  debounceMaxMs: 0,
});

const canMount =
  process.getuid?.() === 0 && spawnSync('mount', ['--version'], { stdio: 'ignore' }).status === 0;

test('a full disk fails writes with UNAVAILABLE and the server recovers when space returns', {
  skip: canMount ? false : 'needs root to mount a small tmpfs (CI runs as root)',
}, async () => {
  const mountPoint = mkdtempSync(join(tmpdir(), 'sepp-full-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=6m', 'tmpfs', mountPoint]);
  const dataDir = join(mountPoint, 'data');
  mkdirSync(dataDir);
  const env = { SEPP_DISK_RESERVE_BYTES: '1MiB' };
  const lines: string[] = [];
  const logger = {
    debug() {},
    info: (event: string) => lines.push(event),
    warn: (event: string) => lines.push(event),
    error: (event: string) => lines.push(event),
    enabled: () => true,
  };
  let t = await startTestServer({ dataDir, env, logger });
  assert.equal(statSync(join(dataDir, 'sepp.reserve')).size, 1024 * 1024, 'the reserve is taken at start');
  try {
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
        assert.match(
          e.details,
          /storage unavailable, nothing was written|the disk of the data directory is full/,
        );
        failures++;
      }
    }
    assert.ok(failures > 0, 'the disk filled up');
    // The server is up: reads work.
    assert.ok((await call(t.client, t.client.listQueues, { pageSize: 0, pageToken: '' })).queues.length > 0);
    assert.equal(existsSync(join(dataDir, 'sepp.reserve')), false, 'the reserve was freed');
    assert.equal(
      (await scrape(t.metricsUrl)).samples.find((x) => x.name === 'sepp_storage_disk_full')?.value,
      1,
    );

    // Workers drain the queue although the disk is full: lease and ack, nack, extend.
    const drained: string[] = [];
    for (let i = 0; i < 4; i++) {
      const { jobs } = await call(t.client, t.client.reserve, {
        maxResponseBytes: 0,
        queues: ['full'],
        maxJobs: 2,
        leaseDurationMs: 60_000,
        waitTimeoutMs: 0,
        workerId: 'drain',
      });
      assert.equal(jobs.length, 2, 'leasing works on a full disk');
      const [a, b] = jobs;
      await call(t.client, t.client.extend, { jobId: a!.jobId, attempt: a!.attempt, leaseDurationMs: 0 });
      await call(t.client, t.client.ack, { jobId: a!.jobId, attempt: a!.attempt });
      await call(t.client, t.client.nack, {
        jobId: b!.jobId,
        attempt: b!.attempt,
        errorMessage: 'later',
        errorClass: '',
        errorStack: '',
        directive: { $case: 'retryDelayMs', value: 3_600_000 },
      });
      drained.push(a!.jobId);
    }
    // Enqueues are refused while the disk is full, saying why, and nothing is stored.
    const refused = await call(t.client, t.client.enqueue, { job: job(999) }).catch((e: ServiceError) => e);
    assert.equal((refused as ServiceError).code, status.UNAVAILABLE);
    assert.match(
      (refused as ServiceError).details,
      /the disk of the data directory is full: enqueues are refused/,
    );
    // …and how much room it waits for.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const told = await call(t.client, t.client.enqueue, { job: job(998) }).catch((e: ServiceError) => e);
    assert.match(
      (told as ServiceError).details,
      /it needs 2097152 bytes \(twice server\.disk_reserve_bytes, at least 1 MiB of which 1048576 on the file system for sepp\.reserve\) and has \d+ bytes free on the file system and \d+ free inside the database/,
    );

    // Free the space: enqueues work again (the check runs at most once a second), the reserve is back.
    rmSync(filler);
    let after: { jobId: string } | undefined;
    const deadline = Date.now() + 30_000;
    while (after === undefined) {
      after = await call(t.client, t.client.enqueue, { job: job(1000) }).catch((e: ServiceError) => {
        assert.equal(e.code, status.UNAVAILABLE, e.details);
        if (Date.now() > deadline) assert.fail('enqueues still refused 30 s after space was freed');
        return new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 100));
      });
    }
    acknowledged.push(after.jobId);
    assert.equal(statSync(join(dataDir, 'sepp.reserve')).size, 1024 * 1024, 'the reserve is back');
    assert.equal(
      (await scrape(t.metricsUrl)).samples.find((x) => x.name === 'sepp_storage_disk_full')?.value,
      0,
    );
    const logged = lines.join('\n');
    assert.match(logged, /storage\.disk_full/);
    assert.match(logged, /storage\.disk_space_back/);

    // Every acknowledged job is there after a restart (but the acked ones), and nothing else.
    t = await t.restart();
    const kept = acknowledged.filter((id) => !drained.includes(id));
    const counts = (await t.server.engine.listQueues()).find((q) => q.name === 'full')?.counts;
    assert.equal((counts?.ready ?? 0) + (counts?.scheduled ?? 0), kept.length);
    for (const id of kept)
      assert.ok(['ready', 'scheduled'].includes((await t.server.engine.getJob(id)).state));
    for (const id of drained) await assert.rejects(async () => t.server.engine.getJob(id), /does not exist/);
    assert.deepEqual(await t.server.engine.counterMismatches(), []);
  } finally {
    await t.dispose();
    execFileSync('umount', [mountPoint]);
    rmSync(mountPoint, { recursive: true, force: true });
  }
});

test('after a full disk, draining the queues is enough: the room acks free inside the database lets enqueues in again', {
  skip: canMount ? false : 'needs root to mount a small tmpfs (CI runs as root)',
}, async () => {
  const mountPoint = mkdtempSync(join(tmpdir(), 'sepp-full-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=12m', 'tmpfs', mountPoint]);
  const dataDir = join(mountPoint, 'data');
  mkdirSync(dataDir);
  const lines: string[] = [];
  const logger = {
    debug() {},
    info: (event: string) => lines.push(event),
    warn: (event: string) => lines.push(event),
    error: (event: string) => lines.push(event),
    enabled: () => true,
  };
  // The engine's clock stands still unless told: every commit of the drain happens in the same
  // second, so only the first may reclaim the WAL and the check a second later must do the rest.
  const clock = new FakeClock();
  const t = await startTestServer({ dataDir, env: { SEPP_DISK_RESERVE_BYTES: '3MiB' }, logger, clock });
  try {
    const acknowledged: string[] = [];
    for (let n = 0; n < 80; n++)
      acknowledged.push((await call(t.client, t.client.enqueue, { job: job(n) })).jobId);
    try {
      writeFileSync(join(mountPoint, 'filler'), Buffer.alloc(16 * 1024 * 1024));
    } catch {
      // ENOSPC: the filler took every free block it could.
    }
    for (let n = 80; n < 120 && !lines.includes('storage.disk_full'); n++) {
      const result = await call(t.client, t.client.enqueue, { job: job(n) }).catch((e: ServiceError) => e);
      if ('jobId' in result) acknowledged.push(result.jobId);
      else assert.equal(result.code, status.UNAVAILABLE, result.details);
    }
    assert.ok(lines.includes('storage.disk_full'), 'the disk filled up');

    // Drain every job; the filler stays. The acks' commits check for room themselves.
    for (;;) {
      const { jobs } = await call(t.client, t.client.reserve, {
        maxResponseBytes: 0,
        queues: ['full'],
        maxJobs: 20,
        leaseDurationMs: 60_000,
        waitTimeoutMs: 0,
        workerId: 'drain',
      });
      if (jobs.length === 0) break;
      // Together, so that their acks share commits (and WAL frames) as a Worker's do.
      await Promise.all(
        jobs.map((j) => call(t.client, t.client.ack, { jobId: j.jobId, attempt: j.attempt })),
      );
    }
    // No enqueue asked: the acks' commits checked for room, and the check that follows them a
    // second later gave back the WAL of the drain's last commits.
    clock.advance(1000);
    assert.ok(lines.includes('storage.disk_space_back'), `the drain made no room: ${lines.join(', ')}`);
    assert.equal(
      (await scrape(t.metricsUrl)).samples.find((x) => x.name === 'sepp_storage_disk_full')?.value,
      0,
    );
    assert.equal(statSync(join(dataDir, 'sepp.reserve')).size, 3 * 1024 * 1024, 'the reserve is back');
    // Enqueues are accepted again at once, into the room the drained jobs left.
    for (let n = 200; n < 210; n++) await call(t.client, t.client.enqueue, { job: job(n) });
    assert.deepEqual(await t.server.engine.counterMismatches(), []);
  } finally {
    await t.dispose();
    execFileSync('umount', [mountPoint]);
    rmSync(mountPoint, { recursive: true, force: true });
  }
});
