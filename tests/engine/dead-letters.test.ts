/**
 * Dead letters: listing (paged, filtered, non-destructive), requeue with a
 * fresh attempt budget and monotonic fencing, and deletion.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FakeClock } from '../../src/engine/clock.ts';
import type { Engine } from '../../src/engine/engine.ts';
import { defaultEngineLimits } from '../../src/engine/settings.ts';
import type { DeadReason, JobInfo } from '../../src/engine/types.ts';
import { expectCode, job, until, withEngine } from '../helpers/engine.ts';

/** Kills one job of `queue` for `reason`, one millisecond after the previous one. */
async function kill(engine: Engine, clock: FakeClock, queue: string, reason: DeadReason): Promise<string> {
  const { jobId } = await engine.enqueue(job(queue, { maxAttempts: 1 }));
  const [leased] = await engine.reserve({ queues: [queue], leaseMs: 1000 });
  assert.equal(leased?.id, jobId);
  if (reason === 'lease_expired') {
    clock.advance(1000);
    await engine.runMaintenance();
  } else {
    await engine.nack({
      jobId,
      attempt: 1,
      error: `died of ${reason}`,
      directive: reason === 'dead_lettered' ? { kind: 'dead_letter' } : { kind: 'backoff' },
    });
  }
  clock.advance(1);
  assert.equal((await engine.getJob(jobId)).deadReason, reason);
  return jobId;
}

async function allPages(
  engine: Engine,
  queue: string,
  pageSize: number,
  reason?: DeadReason,
): Promise<JobInfo[][]> {
  const pages: JobInfo[][] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await engine.listDeadLetters({
      queue,
      pageSize,
      ...(cursor === undefined ? {} : { cursor }),
      ...(reason === undefined ? {} : { reason }),
    });
    pages.push(page.items);
    if (page.nextCursor === null) return pages;
    cursor = page.nextCursor;
    assert.ok(pages.length < 100, 'paging ends');
  }
}

test('dead letters are listed oldest failure first, paged with cursors, filtered by reason', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const reasons: DeadReason[] = [
      'dead_lettered',
      'attempts_exhausted',
      'lease_expired',
      'dead_lettered',
      'attempts_exhausted',
      'dead_lettered',
      'lease_expired',
    ];
    const ids: string[] = [];
    for (const reason of reasons) ids.push(await kill(engine, clock, 'q', reason));
    await kill(engine, clock, 'other', 'dead_lettered');
    await engine.enqueue(job('q')); // not dead: never listed

    const pages = await allPages(engine, 'q', 3);
    assert.deepEqual(
      pages.map((p) => p.length),
      [3, 3, 1],
    );
    const listed = pages.flat();
    assert.deepEqual(
      listed.map((j) => j.id),
      ids,
    );
    assert.deepEqual(
      listed.map((j) => j.deadReason),
      reasons,
    );
    for (const item of listed) {
      assert.equal(item.state, 'dead');
      assert.ok(item.failedAtMs !== null);
      assert.equal(item.errors.length, 1);
      assert.equal(item.lastError, item.errors[0]?.error);
    }
    // Listing is non-destructive.
    assert.deepEqual(
      (await allPages(engine, 'q', 100)).flat().map((j) => j.id),
      ids,
    );
    // Exactly one page: no cursor.
    assert.equal((await engine.listDeadLetters({ queue: 'q', pageSize: 7 })).nextCursor, null);

    const deadLettered = await allPages(engine, 'q', 2, 'dead_lettered');
    assert.deepEqual(
      deadLettered.flat().map((j) => j.id),
      ids.filter((_, i) => reasons[i] === 'dead_lettered'),
    );
    assert.deepEqual(
      (await allPages(engine, 'q', 1, 'lease_expired')).flat().map((j) => j.lastError),
      ['lease expired', 'lease expired'],
    );
    // A queue that exists without dead letters has an empty page; one that was never used does not exist.
    await engine.enqueue(job('empty'));
    assert.deepEqual(await engine.listDeadLetters({ queue: 'empty' }), { items: [], nextCursor: null });
    await expectCode(engine.listDeadLetters({ queue: 'emtpy' }), 'not_found');
    await expectCode(engine.requeueDeadLetters({ queue: 'emtpy', all: true }), 'not_found');
    await expectCode(engine.deleteDeadLetters({ queue: 'emtpy', jobIds: [ids[0]!] }), 'not_found');
  });
});

test('dead-letter listing validates page size and cursor, and caps the page size', async () => {
  const options = { limits: { ...defaultEngineLimits, maxPageSize: 2 } };
  await withEngine({ options }, async ({ engine, clock }) => {
    for (let i = 0; i < 3; i++) await kill(engine, clock, 'q', 'dead_lettered');
    const capped = await engine.listDeadLetters({ queue: 'q', pageSize: 1000 });
    assert.equal(capped.items.length, 2);
    assert.notEqual(capped.nextCursor, null);
    await expectCode(engine.listDeadLetters({ queue: 'q', pageSize: 0 }), 'invalid_argument');
    await expectCode(engine.listDeadLetters({ queue: 'q', pageSize: 1.5 }), 'invalid_argument');
    await expectCode(engine.listDeadLetters({ queue: 'q', cursor: 'not-a-cursor' }), 'invalid_argument');
    // A name no queue can have is reported, not answered with an empty page.
    await expectCode(engine.listDeadLetters({ queue: 'bad name' }), 'invalid_argument');
    await expectCode(engine.listDeadLetters({ queue: 'q'.repeat(300) }), 'invalid_argument');
  });
});

test('requeue: a fresh attempt budget, the job can fail max_attempts more times', async () => {
  await withEngine({}, async ({ engine }) => {
    const { jobId } = await engine.enqueue(job('q', { maxAttempts: 2 }));
    const fail = async (attempt: number) => {
      const [leased] = await engine.reserve({ queues: ['q'] });
      assert.equal(leased?.attempt, attempt);
      return engine.nack({ jobId, attempt, error: `e${attempt}`, directive: { kind: 'delay', delayMs: 0 } });
    };
    await fail(1);
    assert.equal((await fail(2)).state, 'dead');
    assert.equal(await engine.requeueDeadLetters({ queue: 'q', jobIds: [jobId] }), 1);
    const info = await engine.getJob(jobId);
    assert.equal(info.state, 'ready');
    assert.equal(info.deadReason, null);
    assert.equal(info.failedAtMs, null);
    assert.equal(info.attempt, 2, 'attempts keep counting: fencing stays monotonic');
    assert.equal(info.maxAttempts, 4, 'two more deliveries allowed');
    assert.equal(info.errors.length, 2, 'the history of earlier attempts is kept');
    assert.equal((await fail(3)).state, 'ready');
    const last = await fail(4);
    assert.equal(last.state, 'dead');
    assert.equal((await engine.getJob(jobId)).deadReason, 'attempts_exhausted');
  });
});

test('requeue: a stale worker from before the requeue cannot settle the job', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const { jobId } = await engine.enqueue(job('q', { maxAttempts: 1 }));
    const [stale] = await engine.reserve({ queues: ['q'], leaseMs: 1000 });
    assert.ok(stale);
    clock.advance(1000);
    await engine.runMaintenance();
    assert.equal((await engine.getJob(jobId)).deadReason, 'lease_expired');
    await engine.requeueDeadLetters({ queue: 'q', jobIds: [jobId] });
    // Requeued but not leased: the old worker's lease is over.
    await expectCode(engine.ack({ jobId, attempt: stale.attempt }), 'not_found');
    const [fresh] = await engine.reserve({ queues: ['q'] });
    assert.equal(fresh?.attempt, 2);
    await expectCode(engine.ack({ jobId, attempt: stale.attempt }), 'lease_lost');
    await expectCode(engine.nack({ jobId, attempt: stale.attempt, error: 'x' }), 'lease_lost');
    await expectCode(engine.extend({ jobId, attempt: stale.attempt, leaseMs: 1000 }), 'lease_lost');
    await engine.ack({ jobId, attempt: 2 });
  });
});

test('requeue by ids changes only dead jobs of the named queue; it wakes a waiting reserve', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const dead = await kill(engine, clock, 'q', 'dead_lettered');
    const elsewhere = await kill(engine, clock, 'other', 'dead_lettered');
    const { jobId: alive } = await engine.enqueue(job('q', { delayMs: 60_000 }));
    const waiting = engine.reserve({ queues: ['q'], waitMs: 30_000 });
    await until(engine, () => engine.waitingReserves === 1);
    const changed = await engine.requeueDeadLetters({ queue: 'q', jobIds: [dead, elsewhere, alive, 'nope'] });
    assert.equal(changed, 1);
    assert.equal((await waiting)[0]?.id, dead);
    assert.equal((await engine.getJob(elsewhere)).state, 'dead');
    assert.equal((await engine.getJob(alive)).state, 'scheduled');
  });
});

test('delete by ids removes only dead jobs of the named queue', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const a = await kill(engine, clock, 'q', 'dead_lettered');
    const b = await kill(engine, clock, 'q', 'attempts_exhausted');
    const elsewhere = await kill(engine, clock, 'other', 'dead_lettered');
    const { jobId: alive } = await engine.enqueue(job('q'));
    assert.equal(await engine.deleteDeadLetters({ queue: 'q', jobIds: [a, elsewhere, alive] }), 1);
    await assert.rejects(async () => engine.getJob(a), /does not exist/);
    assert.equal((await engine.getJob(b)).state, 'dead');
    assert.equal((await engine.getJob(elsewhere)).state, 'dead');
    assert.equal((await engine.getJob(alive)).state, 'ready');
    const tooMany = Array.from({ length: defaultEngineLimits.maxBatchJobs + 1 }, () => a);
    await expectCode(engine.deleteDeadLetters({ queue: 'q', jobIds: tooMany }), 'resource_exhausted');
    await expectCode(engine.requeueDeadLetters({ queue: 'q', jobIds: tooMany }), 'resource_exhausted');
  });
});

test('requeue all and delete all work through more dead letters than one chunk', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const total = 5500;
    for (let i = 0; i < total; i += 1000) {
      const n = Math.min(1000, total - i);
      await engine.enqueueBatch(Array.from({ length: n }, () => job('q', { maxAttempts: 1 })));
    }
    await engine.enqueue(job('other', { maxAttempts: 1 }));
    const expireAll = async () => {
      for (;;) {
        const leased = await engine.reserve({ queues: ['q', 'other'], maxJobs: 1000, leaseMs: 1000 });
        if (leased.length === 0) break;
      }
      clock.advance(1000);
      await engine.runMaintenance();
      const counts = async () => (await engine.listQueues()).find((q) => q.name === 'q')?.counts;
      for (let i = 0; i < 20 && ((await counts())?.dead ?? 0) < total; i++) await engine.runMaintenance();
      assert.equal((await counts())?.dead, total);
    };
    await expireAll();
    assert.equal(await engine.requeueDeadLetters({ queue: 'q', all: true }), total);
    const counts = (await engine.listQueues()).find((q) => q.name === 'q')?.counts;
    assert.equal(counts?.ready, total);
    assert.equal(counts?.dead, 0);
    await expireAll();
    assert.equal(await engine.deleteDeadLetters({ queue: 'q', all: true }), total);
    assert.equal((await engine.listQueues()).find((q) => q.name === 'q')?.counts.dead, 0);
    assert.equal((await engine.listQueues()).find((q) => q.name === 'other')?.counts.dead, 1);
    assert.equal(await engine.deleteDeadLetters({ queue: 'q', all: true }), 0);
  });
});
