/**
 * Expiry (TTL): a job not handed out by its `expires_at_ms` never is; it goes
 * to the dead letters with reason `expired`, or is deleted when its queue says
 * `expired_action = delete`. Maintenance expires waiting jobs (woken for the
 * earliest expiry), and a lease leaves out any that expired since.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { JobEvent } from '../../src/engine/types.ts';
import { barrier, expectCode, job, rowCount, withEngine, withQueues } from '../helpers/engine.ts';

test('ttl: a job not started in time is dead-lettered (reason expired) when its expiry comes, by the timer', async () => {
  const events: JobEvent[] = [];
  await withEngine({ deps: { onEvent: (e) => events.push(e) } }, async ({ engine, clock }) => {
    const { jobId } = await engine.enqueue(job('q', { ttlMs: 5000 }));
    const startedAt = clock.nowMs();
    assert.equal((await engine.getJob(jobId)).expiresAtMs, startedAt + 5000);
    await engine.runMaintenance();
    clock.advance(4999);
    await barrier(engine);
    assert.equal((await engine.getJob(jobId)).state, 'ready');
    // No runMaintenance: the maintenance timer was pulled forward to the expiry.
    clock.advance(1);
    await barrier(engine);
    const info = await engine.getJob(jobId);
    assert.equal(info.state, 'dead');
    assert.equal(info.deadReason, 'expired');
    assert.equal(info.failedAtMs, startedAt + 5000);
    assert.equal(info.attempt, 0);
    assert.match(info.lastError ?? '', /^expired: not started before .* \(expires_at_ms\)$/);
    assert.deepEqual(await engine.reserve({ queues: ['q'] }), []);
    assert.ok(events.some((e) => e.kind === 'ttl_expired' && e.count === 1));
    assert.ok(events.some((e) => e.kind === 'dead_lettered' && e.reason === 'expired'));
    assert.deepEqual(
      (await engine.listDeadLetters({ queue: 'q', reason: 'expired' })).items.map((j) => j.id),
      [jobId],
    );
  });
});

test('a lease leaves out a job that expired since the last maintenance pass, and takes the next one', async () => {
  await withEngine({}, async ({ engine, clock, db }) => {
    const { jobId: stale } = await engine.enqueue(
      job('q', { priority: 9, expiresAtMs: clock.nowMs() + 60_000 }),
    );
    const { jobId: fresh } = await engine.enqueue(job('q'));
    // Expire it behind maintenance's back, as if its pass had not come round yet.
    db.prepare('UPDATE jobs SET expires_at_ms = ? WHERE id = ?').run(clock.nowMs(), stale);
    const leased = await engine.reserve({ queues: ['q'], maxJobs: 1 });
    assert.deepEqual(
      leased.map((j) => j.id),
      [fresh],
    );
    const info = await engine.getJob(stale);
    assert.equal(info.state, 'dead');
    assert.equal(info.deadReason, 'expired');
    assert.equal(info.attempt, 0, 'the lease that found it expired gives its attempt back');
    assert.equal(info.leaseDeadlineMs, null);
  });
});

test('expired_action = delete: the job is deleted and its idempotency key released', async () => {
  const options = withQueues({ q: { expiredAction: 'delete' } });
  const events: JobEvent[] = [];
  await withEngine({ options, deps: { onEvent: (e) => events.push(e) } }, async ({ engine, clock, db }) => {
    const first = await engine.enqueue(job('q', { ttlMs: 1000, idempotencyKey: 'once' }));
    clock.advance(1000);
    await barrier(engine);
    assert.equal(rowCount(db, 'jobs'), 0);
    assert.ok(events.some((e) => e.kind === 'ttl_expired'));
    assert.ok(!events.some((e) => e.kind === 'dead_lettered'));
    const again = await engine.enqueue(job('q', { idempotencyKey: 'once' }));
    assert.equal(again.deduplicated, false);
    assert.notEqual(again.jobId, first.jobId);
  });
});

test('expiry applies to retries too, and to scheduled jobs, which never become ready', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const { jobId: retried } = await engine.enqueue(job('q', { ttlMs: 10_000 }));
    const [leased] = await engine.reserve({ queues: ['q'] });
    assert.ok(leased);
    await engine.nack({
      jobId: retried,
      attempt: 1,
      error: 'later',
      directive: { kind: 'delay', delayMs: 20_000 },
    });
    const { jobId: scheduled } = await engine.enqueue(job('q', { delayMs: 5000, ttlMs: 8000 }));
    clock.advance(20_000);
    await barrier(engine);
    for (const id of [retried, scheduled]) {
      const info = await engine.getJob(id);
      assert.equal(info.state, 'dead', id);
      assert.equal(info.deadReason, 'expired');
    }
    assert.equal((await engine.getJob(retried)).attempt, 1);
    assert.deepEqual(await engine.reserve({ queues: ['q'] }), []);
  });
});

test('a job already running is not stopped by its expiry; requeueing an expired dead letter drops the expiry', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const { jobId } = await engine.enqueue(job('q', { ttlMs: 1000 }));
    const [leased] = await engine.reserve({ queues: ['q'], leaseMs: 60_000 });
    clock.advance(5000);
    await barrier(engine);
    assert.equal((await engine.getJob(jobId)).state, 'leased');
    await engine.ack({ jobId, attempt: leased?.attempt ?? 0 });

    const { jobId: late } = await engine.enqueue(job('q', { ttlMs: 1000 }));
    clock.advance(1000);
    await barrier(engine);
    assert.equal((await engine.getJob(late)).deadReason, 'expired');
    assert.equal(await engine.requeueDeadLetters({ queue: 'q', jobIds: [late] }), 1);
    assert.equal((await engine.getJob(late)).expiresAtMs, null);
    const [again] = await engine.reserve({ queues: ['q'] });
    assert.equal(again?.id, late);
  });
});

test('an expiry that could never be met is refused: before the job is due, in the past, too far, or both forms', async () => {
  await withEngine({}, async ({ engine, clock, db }) => {
    const now = clock.nowMs();
    const cases = [
      { ttlMs: 0 },
      { ttlMs: -5 },
      { expiresAtMs: now },
      { expiresAtMs: now - 1 },
      { delayMs: 10_000, ttlMs: 10_000 },
      { runAtMs: now + 5000, expiresAtMs: now + 4000 },
      { ttlMs: 366 * 86_400_000 },
      { ttlMs: 1000, expiresAtMs: now + 1000 },
      { ttlMs: 1.5 },
    ];
    for (const fields of cases) {
      const results = await engine.enqueueBatch([job('q', fields)]);
      const [result] = results;
      assert.ok(result && !result.ok, JSON.stringify(fields));
      assert.equal(result.reason, 'invalid_job', JSON.stringify(fields));
    }
    const error = await expectCode(
      engine.enqueue(job('q', { delayMs: 10_000, ttlMs: 5000 })),
      'invalid_argument',
    );
    assert.match(error.message, /would expire .* before it is due/);
    assert.equal(rowCount(db, 'jobs'), 0);
  });
});
