/**
 * Hard execution timeouts (issue 35): an attempt of a job with `timeoutMs` (or its
 * queue's `defaultTimeoutMs`) ends failed with reason `timeout` once its lease time
 * plus the timeout passes on the server's clock, whatever its extends; the queue's
 * retry policy decides what follows, the Work streams are told, and settlements of
 * that attempt are fenced afterwards. Distinct from a lease that runs out.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TimeoutNotice } from '../../src/engine/control-types.ts';
import type { JobEvent } from '../../src/engine/types.ts';
import { barrier, expectCode, job, withEngine, withQueues } from '../helpers/engine.ts';

/** Retries at once, so a timed-out attempt's job is ready again without waiting out a backoff. */
const noBackoff = { backoff: { baseMs: 0, factor: 1, capMs: 0, jitter: 0 } };

test('timeout: the lease is capped at the timeout, extends cannot pass it, and the sweep fails the attempt (reason timeout)', async () => {
  const events: JobEvent[] = [];
  await withEngine(
    { options: withQueues({ q: noBackoff }), deps: { onEvent: (e) => events.push(e) } },
    async ({ engine, clock }) => {
      const notices: TimeoutNotice[] = [];
      engine.onAttemptsTimedOut((n) => notices.push(...n));
      const { jobId } = await engine.enqueue(job('q', { timeoutMs: 5000 }));
      assert.equal((await engine.getJob(jobId)).timeoutMs, 5000);
      const leasedAt = clock.nowMs();
      const [leased] = await engine.reserve({ queues: ['q'], leaseMs: 30_000, workerId: 'w1' });
      assert.equal(leased!.timeoutAtMs, leasedAt + 5000);
      assert.equal(leased!.leaseDeadlineMs, leasedAt + 5000, 'the lease never outlives the attempt');
      assert.equal((await engine.getJob(jobId)).timeoutAtMs, leasedAt + 5000);

      clock.advance(3000);
      await barrier(engine);
      const extended = await engine.extend({ jobId, attempt: 1, leaseMs: 30_000 });
      assert.equal(extended.leaseDeadlineMs, leasedAt + 5000, 'an extend stops at the timeout');
      assert.equal((await engine.getJob(jobId)).state, 'leased');

      // No runMaintenance: the lease deadline (= the timeout) set the timer.
      clock.advance(2000);
      await barrier(engine);
      const info = await engine.getJob(jobId);
      assert.equal(info.state, 'ready', 'retried per the queue (no backoff here)');
      assert.equal(info.attempt, 1);
      assert.equal(info.timeoutAtMs, null, 'shown only while leased');
      assert.match(
        info.lastError ?? '',
        /^timeout: the attempt ran past its hard timeout at .* \(timeout_ms\)$/,
      );
      assert.deepEqual(notices, [
        { jobId, queue: 'q', attempt: 1, workerId: 'w1', timeoutAtMs: leasedAt + 5000 },
      ]);
      assert.ok(events.some((e) => e.kind === 'timed_out' && e.queue === 'q' && e.count === 1));
      assert.ok(!events.some((e) => e.kind === 'expired'), 'not counted as a lease that ran out');

      // Fenced: the timed-out attempt cannot extend (told why), ack or nack any more.
      const refused = await expectCode(engine.extend({ jobId, attempt: 1, leaseMs: 0 }), 'job_timed_out');
      assert.match(refused.message, /attempt 1 ran past its hard timeout/);
      await expectCode(engine.ack({ jobId, attempt: 1 }), 'not_found');
      await expectCode(engine.nack({ jobId, attempt: 1, error: 'late' }), 'not_found');

      // The next attempt has a timeout of its own, and the late ack of attempt 1 is a lost lease.
      const [again] = await engine.reserve({ queues: ['q'], leaseMs: 1000 });
      assert.equal(again!.attempt, 2);
      assert.equal(again!.timeoutAtMs, clock.nowMs() + 5000);
      assert.equal(again!.leaseDeadlineMs, clock.nowMs() + 1000, 'a lease shorter than the timeout stays so');
      await expectCode(engine.ack({ jobId, attempt: 1 }), 'lease_lost');
      await engine.ack({ jobId, attempt: 2 });
    },
  );
});

test('timeout: an extend past the timeout is refused before the sweep has run, and changes nothing', async () => {
  await withEngine({}, async ({ engine, clock, db }) => {
    const { jobId } = await engine.enqueue(job('q', { timeoutMs: 60_000 }));
    await engine.reserve({ queues: ['q'], leaseMs: 30_000 });
    // As if the timeout had passed with the maintenance pass not round yet.
    db.prepare('UPDATE jobs SET timeout_at_ms = ? WHERE id = ?').run(clock.nowMs(), jobId);
    const refused = await expectCode(engine.extend({ jobId, attempt: 1, leaseMs: 0 }), 'job_timed_out');
    assert.match(refused.message, /ran past its hard timeout at /);
    const info = await engine.getJob(jobId);
    assert.equal(info.state, 'leased');
    assert.equal(info.leaseDeadlineMs, clock.nowMs() + 30_000, 'the lease was not moved');
  });
});

test("timeout: the queue's default_timeout_ms applies to jobs without their own; a job's own wins; 0 is none", async () => {
  const options = withQueues({ q: { defaultTimeoutMs: 2000 }, plain: {} });
  await withEngine({ options }, async ({ engine, clock }) => {
    const { jobId: byQueue } = await engine.enqueue(job('q'));
    const { jobId: own } = await engine.enqueue(job('q', { timeoutMs: 9000, priority: 1 }));
    await engine.enqueue(job('plain'));
    const now = clock.nowMs();
    const leased = await engine.reserve({ queues: ['q'], maxJobs: 2, leaseMs: 30_000 });
    const byId = new Map(leased.map((j) => [j.id, j]));
    assert.equal(byId.get(byQueue)!.timeoutAtMs, now + 2000);
    assert.equal(byId.get(byQueue)!.leaseDeadlineMs, now + 2000);
    assert.equal(byId.get(own)!.timeoutAtMs, now + 9000);
    assert.equal(byId.get(own)!.leaseDeadlineMs, now + 9000);
    const [plain] = await engine.reserve({ queues: ['plain'], leaseMs: 30_000 });
    assert.equal(plain!.timeoutAtMs, null);
    assert.equal(plain!.leaseDeadlineMs, now + 30_000, 'no timeout: the lease as before');
    assert.equal((await engine.getJob(plain!.id)).timeoutAtMs, null);
    // No extend, no runMaintenance: the lease woke maintenance for the capped deadline.
    clock.advance(2000);
    await barrier(engine);
    assert.match((await engine.getJob(byQueue)).lastError ?? '', /^timeout: /);
    assert.equal((await engine.getJob(own)).state, 'leased');
    await engine.ack({ jobId: own, attempt: 1 });
    await engine.ack({ jobId: plain!.id, attempt: 1 });
  });
});

test('timeout on the last attempt: the job is dead with reason timeout', async () => {
  const events: JobEvent[] = [];
  await withEngine({ deps: { onEvent: (e) => events.push(e) } }, async ({ engine, clock }) => {
    const { jobId } = await engine.enqueue(job('q', { timeoutMs: 1000, maxAttempts: 1 }));
    await engine.reserve({ queues: ['q'], leaseMs: 30_000 });
    clock.advance(1000);
    await barrier(engine);
    const info = await engine.getJob(jobId);
    assert.equal(info.state, 'dead');
    assert.equal(info.deadReason, 'timeout');
    assert.ok(events.some((e) => e.kind === 'dead_lettered' && e.reason === 'timeout'));
    assert.deepEqual(
      (await engine.listDeadLetters({ queue: 'q', reason: 'timeout' })).items.map((j) => j.id),
      [jobId],
    );
  });
});

test('a lease that runs out before the timeout is a lease expiry, not a timeout', async () => {
  const events: JobEvent[] = [];
  await withEngine({ deps: { onEvent: (e) => events.push(e) } }, async ({ engine, clock }) => {
    const { jobId } = await engine.enqueue(job('q', { timeoutMs: 60_000 }));
    await engine.reserve({ queues: ['q'], leaseMs: 5000 });
    clock.advance(5000);
    await barrier(engine);
    const info = await engine.getJob(jobId);
    assert.equal(info.state, 'ready');
    assert.equal(info.lastError, 'lease expired');
    assert.ok(events.some((e) => e.kind === 'expired'));
    assert.ok(!events.some((e) => e.kind === 'timed_out'));
  });
});

test('a cancel asked for before the timeout wins: the job ends cancelled, never retried', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const { jobId } = await engine.enqueue(job('q', { timeoutMs: 1000 }));
    await engine.reserve({ queues: ['q'], leaseMs: 30_000 });
    await engine.cancel(jobId);
    clock.advance(1000);
    await barrier(engine);
    assert.equal((await engine.getJob(jobId)).state, 'cancelled');
  });
});

test('timeout_ms out of range is refused (invalid_job), naming the field', async () => {
  await withEngine({}, async ({ engine }) => {
    for (const timeoutMs of [-1, 1.5, 30 * 24 * 3600 * 1000 + 1]) {
      const result = await engine.enqueueBatch([job('q', { timeoutMs })]);
      const [first] = result;
      assert.equal(first!.ok, false, `timeout_ms ${timeoutMs}`);
      if (!first!.ok) {
        assert.equal(first!.reason, 'invalid_job');
        assert.match(first!.message, /^timeout_ms is /);
      }
    }
  });
});
