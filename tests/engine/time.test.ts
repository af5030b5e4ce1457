/**
 * Time-driven behaviour, all on the fake clock: lease expiry, promotion of
 * scheduled jobs, and the retention sweeps of dead letters, completed jobs
 * and idempotency keys.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { barrier, job, rowCount, until, withEngine, withQueues } from '../helpers/engine.ts';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** Sweeps run at most once a minute (src/engine/maintenance.ts). */
const SWEEP_INTERVAL_MS = 60_000;

test('lease expiry: back to ready once the deadline passes, the attempt counted', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const { jobId } = await engine.enqueue(job('q', { maxAttempts: 3 }));
    const [leased] = await engine.reserve({ queues: ['q'], leaseMs: 10_000 });
    assert.equal(leased?.attempt, 1);
    clock.advance(9999);
    await engine.runMaintenance();
    assert.equal((await engine.getJob(jobId)).state, 'leased');
    clock.advance(1);
    await engine.runMaintenance();
    const info = await engine.getJob(jobId);
    assert.equal(info.state, 'ready');
    assert.equal(info.attempt, 1, 'the expired delivery is counted');
    assert.equal(info.lastError, 'lease expired');
    assert.deepEqual(info.errors, [
      { attempt: 1, atMs: clock.nowMs(), error: 'lease expired', errorClass: null, stack: null },
    ]);
    assert.equal(info.leaseDeadlineMs, null);
    assert.equal(info.runAtMs, clock.nowMs());
    const [again] = await engine.reserve({ queues: ['q'] });
    assert.equal(again?.attempt, 2);
  });
});

test('lease expiry happens on its own: the maintenance timer fires at the deadline', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const { jobId } = await engine.enqueue(job('q'));
    await engine.reserve({ queues: ['q'], leaseMs: 10_000 });
    clock.advance(10_000);
    // No runMaintenance: the timer submitted a pass, which commits before the barrier.
    await until(engine, async () => (await engine.getJob(jobId)).state === 'ready');
  });
});

test('lease expiry on the last attempt: dead with reason lease_expired', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const { jobId } = await engine.enqueue(job('q', { maxAttempts: 2 }));
    for (let attempt = 1; attempt <= 2; attempt++) {
      const [leased] = await engine.reserve({ queues: ['q'], leaseMs: 5000 });
      assert.equal(leased?.attempt, attempt);
      clock.advance(5000);
      await engine.runMaintenance();
    }
    const info = await engine.getJob(jobId);
    assert.equal(info.state, 'dead');
    assert.equal(info.deadReason, 'lease_expired');
    assert.equal(info.failedAtMs, clock.nowMs());
    assert.deepEqual(
      info.errors.map((e) => e.attempt),
      [1, 2],
    );
  });
});

test('leases expire each at its own deadline', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    await engine.enqueueBatch([job('q'), job('q'), job('q')]);
    const [a] = await engine.reserve({ queues: ['q'], leaseMs: 3000 });
    const [b] = await engine.reserve({ queues: ['q'], leaseMs: 1000 });
    const [c] = await engine.reserve({ queues: ['q'], leaseMs: 2000 });
    assert.ok(a && b && c);
    const states = () => Promise.all([a, b, c].map(async (j) => (await engine.getJob(j.id)).state));
    clock.advance(1000);
    await engine.runMaintenance();
    assert.deepEqual(await states(), ['leased', 'ready', 'leased']);
    clock.advance(1000);
    await engine.runMaintenance();
    assert.deepEqual(await states(), ['leased', 'ready', 'ready']);
    clock.advance(1000);
    await engine.runMaintenance();
    assert.deepEqual(await states(), ['ready', 'ready', 'ready']);
  });
});

test('scheduling: a delay or a future run-at is scheduled, a past run-at is ready now', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const now = clock.nowMs();
    const delayed = await engine.enqueue(job('q', { delayMs: 5000 }));
    const at = await engine.enqueue(job('q', { runAtMs: now + 7000 }));
    const past = await engine.enqueue(job('q', { runAtMs: now - 60_000 }));
    const zero = await engine.enqueue(job('q', { delayMs: 0 }));
    const state = async (id: string) => [
      (await engine.getJob(id)).state,
      (await engine.getJob(id)).runAtMs - now,
    ];
    assert.deepEqual(await state(delayed.jobId), ['scheduled', 5000]);
    assert.deepEqual(await state(at.jobId), ['scheduled', 7000]);
    assert.deepEqual(await state(past.jobId), ['ready', 0]);
    assert.deepEqual(await state(zero.jobId), ['ready', 0]);
    const counts = (await engine.listQueues())[0]?.counts;
    assert.equal(counts?.scheduled, 2);
    assert.equal(counts?.ready, 2);
    // Scheduled jobs are not handed out early.
    assert.equal((await engine.reserve({ queues: ['q'], maxJobs: 10 })).length, 2);
    clock.advance(4999);
    await engine.runMaintenance();
    assert.equal((await engine.getJob(delayed.jobId)).state, 'scheduled');
    clock.advance(1);
    await engine.runMaintenance();
    assert.equal((await engine.getJob(delayed.jobId)).state, 'ready');
    assert.equal((await engine.getJob(at.jobId)).state, 'scheduled');
    clock.advance(2000);
    // Promotion also happens on its own, from the maintenance timer.
    await until(engine, async () => (await engine.getJob(at.jobId)).state === 'ready');
  });
});

test('promotion of more due jobs than one maintenance pass handles continues at once', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    for (let i = 0; i < 3; i++) {
      await engine.enqueueBatch(Array.from({ length: 1000 }, () => job('q', { delayMs: 1000 })));
    }
    clock.advance(1000);
    await engine.runMaintenance();
    const ready = async () => (await engine.listQueues())[0]?.counts.ready ?? 0;
    assert.ok((await ready()) > 0);
    // A full pass asks for the next one at once (a timer due now).
    for (let i = 0; i < 10 && (await ready()) < 3000; i++) {
      clock.advance(0);
      await barrier(engine);
    }
    assert.equal(await ready(), 3000);
  });
});

test('retention: dead letters are swept after deadRetentionMs, not before', async () => {
  const options = withQueues({ q: { deadRetentionMs: HOUR_MS } });
  await withEngine({ options }, async ({ engine, clock }) => {
    const { jobId } = await engine.enqueue(job('q'));
    const { jobId: other } = await engine.enqueue(job('kept'));
    for (const id of [jobId, other]) {
      const [leased] = await engine.reserve({ queues: [(await engine.getJob(id)).queue] });
      await engine.nack({
        jobId: id,
        attempt: leased?.attempt ?? 0,
        error: 'x',
        directive: { kind: 'dead_letter' },
      });
    }
    clock.advance(HOUR_MS);
    await engine.runMaintenance();
    assert.equal((await engine.getJob(jobId)).state, 'dead', 'kept for the whole retention period');
    clock.advance(SWEEP_INTERVAL_MS);
    await engine.runMaintenance();
    await assert.rejects(async () => engine.getJob(jobId), /does not exist/);
    assert.equal((await engine.listQueues()).find((q) => q.name === 'q')?.counts.dead, 0);
    // The default retention is 14 days.
    clock.advance(14 * DAY_MS - HOUR_MS - SWEEP_INTERVAL_MS - 1);
    await engine.runMaintenance();
    assert.equal((await engine.getJob(other)).state, 'dead');
    clock.advance(SWEEP_INTERVAL_MS + 1);
    await engine.runMaintenance();
    await assert.rejects(async () => engine.getJob(other), /does not exist/);
  });
});

test('retention: completed jobs are kept when completedRetentionMs > 0, then swept', async () => {
  const options = withQueues({ keep: { completedRetentionMs: HOUR_MS } });
  await withEngine({ options }, async ({ engine, clock, db }) => {
    const { jobId } = await engine.enqueue(job('keep', { idempotencyKey: 'k' }));
    const [leased] = await engine.reserve({ queues: ['keep'] });
    assert.equal(leased?.id, jobId);
    clock.advance(10);
    await engine.ack({ jobId, attempt: 1 });
    const info = await engine.getJob(jobId);
    assert.equal(info.state, 'completed');
    assert.equal(info.completedAtMs, clock.nowMs());
    assert.equal(info.leaseDeadlineMs, null);
    assert.equal((await engine.listQueues())[0]?.counts.completed, 1);
    // A completed job cannot be settled again, and does not count toward max_depth.
    const again = await engine.ackBatch([{ jobId, attempt: 1 }]);
    assert.deepEqual(
      again.map((o) => (o.ok ? 'ok' : o.code)),
      ['not_found'],
    );
    assert.equal((await engine.enqueue(job('keep', { idempotencyKey: 'k' }))).jobId, jobId);

    clock.advance(HOUR_MS);
    await engine.runMaintenance();
    assert.equal((await engine.getJob(jobId)).state, 'completed');
    clock.advance(SWEEP_INTERVAL_MS);
    await engine.runMaintenance();
    await assert.rejects(async () => engine.getJob(jobId), /does not exist/);
    assert.equal(rowCount(db, 'jobs'), 0);
  });
});

test('retention: idempotency keys are swept after the dedup window', async () => {
  const options = withQueues({ short: { dedupWindowMs: 10 * 60_000 } });
  await withEngine({ options }, async ({ engine, clock, db }) => {
    await engine.enqueue(job('short', { idempotencyKey: 'a' }));
    await engine.enqueue(job('long', { idempotencyKey: 'a' }));
    assert.equal(rowCount(db, 'idempotency_keys'), 2);
    clock.advance(10 * 60_000);
    await engine.runMaintenance();
    assert.equal(rowCount(db, 'idempotency_keys'), 1, 'the short window is over');
    clock.advance(DAY_MS);
    await engine.runMaintenance();
    assert.equal(rowCount(db, 'idempotency_keys'), 0);
  });
});
