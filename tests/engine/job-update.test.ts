/**
 * Changing a waiting job: priority, run time, run now; one job or every
 * waiting job a filter matches. A leased job is refused with
 * failed_precondition.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { barrier, expectCode, job, withEngine } from '../helpers/engine.ts';

test('priority: a ready job moved up is leased first', async () => {
  await withEngine({}, async ({ engine }) => {
    const { jobId: first } = await engine.enqueue(job('q'));
    const { jobId: second } = await engine.enqueue(job('q'));
    const updated = await engine.updateJob(second, { priority: 7 });
    assert.equal(updated.priority, 7);
    assert.equal(updated.state, 'ready');
    const leased = await engine.reserve({ queues: ['q'], maxJobs: 2 });
    assert.deepEqual(
      leased.map((j) => j.id),
      [second, first],
    );
  });
});

test('run now: a scheduled job, or one waiting for its retry, becomes ready at once and wakes a waiting worker', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const { jobId: later } = await engine.enqueue(job('q', { delayMs: 3_600_000 }));
    const waiting = engine.reserve({ queues: ['q'], waitMs: 30_000 });
    await barrier(engine);
    const updated = await engine.updateJob(later, { runNow: true });
    assert.equal(updated.state, 'ready');
    assert.equal(updated.runAtMs, clock.nowMs());
    assert.equal((await waiting)[0]?.id, later);

    await engine.nack({
      jobId: later,
      attempt: 1,
      error: 'x',
      directive: { kind: 'delay', delayMs: 600_000 },
    });
    assert.equal((await engine.getJob(later)).state, 'scheduled');
    await engine.updateJob(later, { runNow: true });
    const [retry] = await engine.reserve({ queues: ['q'] });
    assert.equal(retry?.id, later);
    assert.equal(retry?.attempt, 2);
  });
});

test('run time: a ready job can be put off, and comes back when due', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const { jobId } = await engine.enqueue(job('q'));
    const updated = await engine.updateJob(jobId, { delayMs: 10_000, priority: 3 });
    assert.equal(updated.state, 'scheduled');
    assert.equal(updated.runAtMs, clock.nowMs() + 10_000);
    assert.deepEqual(await engine.reserve({ queues: ['q'] }), []);
    clock.advance(10_000);
    await barrier(engine);
    const [leased] = await engine.reserve({ queues: ['q'] });
    assert.equal(leased?.id, jobId);
    assert.equal(leased?.priority, 3);
    assert.equal((await engine.listQueues())[0]?.counts.scheduled, 0);
  });
});

test('a leased job cannot be changed; nor a finished one, nor one that is not there', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const { jobId } = await engine.enqueue(job('q'));
    await engine.reserve({ queues: ['q'], workerId: 'w9' });
    const leased = await expectCode(engine.updateJob(jobId, { priority: 9 }), 'failed_precondition');
    assert.match(leased.message, /leased by worker w9: a running job cannot be changed/);
    await engine.nack({ jobId, attempt: 1, error: 'x', directive: { kind: 'dead_letter' } });
    await expectCode(engine.updateJob(jobId, { runNow: true }), 'failed_precondition');
    await expectCode(engine.updateJob('01900000-0000-7000-8000-000000000000', { priority: 1 }), 'not_found');
    const { jobId: expiring } = await engine.enqueue(job('q', { ttlMs: 5000 }));
    const tooLate = await expectCode(
      engine.updateJob(expiring, { runAtMs: clock.nowMs() + 5000 }),
      'invalid_argument',
    );
    assert.match(tooLate.message, /not before the job's expiry/);
  });
});

test('changes are checked before anything is written', async () => {
  await withEngine({}, async ({ engine }) => {
    const { jobId } = await engine.enqueue(job('q'));
    const bad = [
      {},
      { priority: 10 },
      { priority: 1.5 },
      { runNow: true, delayMs: 5 },
      { runAtMs: 1, delayMs: 5 },
      { delayMs: -1 },
      { delayMs: 400 * 86_400_000 },
    ];
    for (const changes of bad) {
      await expectCode(engine.updateJob(jobId, changes), 'invalid_argument');
    }
    const bulk = await expectCode(engine.updateJobs({ queue: 'q' }, { delayMs: 5 }), 'invalid_argument');
    assert.match(bulk.message, /one job at a time/);
    await expectCode(
      engine.updateJobs({ queue: 'q', states: ['leased'] }, { runNow: true }),
      'invalid_argument',
    );
    const info = await engine.getJob(jobId);
    assert.equal(info.priority, 0);
    assert.equal(info.state, 'ready');
  });
});

test('bulk: run now every scheduled job of a type, and reprioritise; audited once with the count', async () => {
  await withEngine({}, async ({ engine }) => {
    const later = Array.from({ length: 7000 }, () => job('q', { type: 'report', delayMs: 60_000 }));
    for (let i = 0; i < 7; i++) await engine.enqueueBatch(later.slice(i * 1000, (i + 1) * 1000));
    await engine.enqueue(job('q', { type: 'email', delayMs: 60_000 }));
    const audit = { actor: 'alice', action: 'jobs.update', target: 'queue:q' };
    const moved = await engine.updateJobs(
      { queue: 'q', type: 'report' },
      { runNow: true, priority: 4 },
      audit,
    );
    assert.equal(moved, 7000);
    const q = (await engine.listQueues())[0];
    assert.equal(q?.counts.ready, 7000);
    assert.equal(q?.counts.scheduled, 1, 'the email job is left');
    const [first] = await engine.reserve({ queues: ['q'] });
    assert.equal(first?.priority, 4);
    const entries = (await engine.listAudit({ action: 'jobs.update' })).items;
    assert.equal(entries.length, 1);
    const { operationId, ...details } = entries[0]?.details ?? {};
    assert.equal(typeof operationId, 'string');
    assert.deepEqual(details, {
      queue: 'q',
      type: 'report',
      states: ['scheduled', 'ready'],
      runNow: true,
      priority: 4,
      matched: 7000,
      changed: 7000,
      done: true,
    });
    // Priority alone touches only jobs whose priority differs.
    assert.equal(await engine.updateJobs({ queue: 'q', type: 'report' }, { priority: 4 }), 0);
    assert.equal(await engine.updateJobs({ queue: 'q', states: ['ready'] }, { priority: 8 }), 6999);
  });
});
